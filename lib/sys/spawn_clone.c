/*
 * spawn_clone.c: a child born in a cgroup (spawn.h's in_cgroup) —
 * clone3 into it, sharing the agent's memory until its exec where it
 * can, forking into it where it cannot, and joining it first thing
 * where clone3 is refused.  spawn.c decides when, and runs the child.
 */
#include <sys/syscall.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "base/tunables.h"
#include "spawn_int.h"

/*
 * clone3's arguments (linux/sched.h's struct clone_args, which not every
 * libc's headers carry).
 */
struct spawn_clone_args {
	uint64_t	flags, pidfd, child_tid, parent_tid, exit_signal;
	uint64_t	stack, stack_size, tls, set_tid, set_tid_size, cgroup;
};
#define SPAWN_CLONE_INTO_CGROUP	0x200000000ULL
#ifndef SYS_clone3
#define SYS_clone3		435
#endif

#define SPAWN_CLONE_VM		0x00000100ULL
#define SPAWN_CLONE_VFORK	0x00004000ULL

/* What the child of spawn_clone_vm is given, on the agent's stack. */
struct spawn_vm_arg {
	const struct spawn_opts		*o;
	const struct spawn_groups	*g;
	int				 errfd;
};

#if defined(__x86_64__) && !defined(__SANITIZE_ADDRESS__)
/*
 * The child of a shared-memory clone runs on a stack of its own (the
 * agent's is the agent's), suspended parent and all, as posix_spawn's
 * does: it only sets itself up and execs or exits.  (Not under
 * AddressSanitizer: the child's frames would leave their poison in the
 * shadow of the memory it shares.)
 */
static char	spawn_vm_stack[SPAWN_VM_STACK] __attribute__((aligned(16)));

static void
spawn_vm_child(void *p)
{
	const struct spawn_vm_arg	*x = p;

	spawn_child(x->o, x->g, x->errfd, -1);
}

/*
 * clone3 as vfork does it (the child shares the agent's memory, the
 * agent waits for its exec), into a cgroup: the child starts in fn on
 * spawn_vm_stack and never returns.  The parent's pid, or -1 and errno.
 */
static pid_t
spawn_clone_vm(struct spawn_clone_args *a, void (*fn)(void *), void *arg)
{
	register void	(*rfn)(void *) __asm__("r12") = fn;
	register void	*rarg __asm__("r13") = arg;
	long		 ret;

	a->stack = (uint64_t)(uintptr_t)spawn_vm_stack;
	a->stack_size = sizeof(spawn_vm_stack);
	__asm__ volatile (
	    "syscall\n\t"
	    "test %%rax, %%rax\n\t"
	    "jnz 1f\n\t"
	    "xor %%ebp, %%ebp\n\t"
	    "mov %%r13, %%rdi\n\t"
	    "call *%%r12\n\t"
	    "mov $231, %%eax\n\t"	/* exit_group(127): fn returned */
	    "mov $127, %%edi\n\t"
	    "syscall\n\t"
	    "hlt\n"
	    "1:"
	    : "=a" (ret)
	    : "0" ((long)SYS_clone3), "D" (a), "S" (sizeof(*a)), "r" (rfn),
	      "r" (rarg)
	    : "rcx", "r11", "memory", "cc");
	if (ret < 0) {
		errno = (int)-ret;
		return -1;
	}
	return (pid_t)ret;
}
#endif

/*
 * fork, into o's cgroup when it has one: clone3 puts the child there
 * before it runs.  A child with nothing posix_spawn could not do shares
 * the agent's memory until its exec, as vfork (no page table to copy, no
 * copy-on-write fault after): the parent's pid is returned, never 0.
 * Where clone3 is refused (an old kernel, a seccomp profile that answers
 * ENOSYS) it forks, and *joinfd is the cgroup's cgroup.procs for the
 * child to write itself into first.
 */
pid_t
spawn_clone(const struct spawn_opts *o, const struct spawn_groups *g,
    int errfd, int *joinfd)
{
	struct spawn_clone_args	a;
	long			pid;

	*joinfd = -1;
	if (!o->in_cgroup)
		return fork();
#if defined(__x86_64__) && !defined(__SANITIZE_ADDRESS__)
	if (!o->has_user && o->ctty == NULL && !spawn_confined(o->confine)) {
		struct spawn_vm_arg	x = { o, g, errfd };

		memset(&a, 0, sizeof(a));
		a.flags = SPAWN_CLONE_INTO_CGROUP | SPAWN_CLONE_VM |
		    SPAWN_CLONE_VFORK;
		a.exit_signal = SIGCHLD;
		a.cgroup = (uint64_t)o->cgroup_fd;
		if ((pid = spawn_clone_vm(&a, spawn_vm_child, &x)) != -1 ||
		    (errno != ENOSYS && errno != E2BIG && errno != EPERM &&
		    errno != EINVAL))
			return (pid_t)pid;
	}
#else
	(void)g;
	(void)errfd;
#endif
	memset(&a, 0, sizeof(a));
	a.flags = SPAWN_CLONE_INTO_CGROUP;
	a.exit_signal = SIGCHLD;
	a.cgroup = (uint64_t)o->cgroup_fd;
	pid = syscall(SYS_clone3, &a, sizeof(a));
	if (pid != -1 || (errno != ENOSYS && errno != E2BIG &&
	    errno != EPERM))
		return (pid_t)pid;
	if ((*joinfd = openat(o->cgroup_fd, "cgroup.procs", O_WRONLY |
	    O_CLOEXEC)) == -1)
		return -1;
	return fork();
}
