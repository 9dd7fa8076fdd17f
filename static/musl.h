/*
 * What the static build needs from its C library and musl 1.2.3 (Debian
 * 12's) lacks: glibc's extensions tend calls, written over the syscalls
 * they wrap.  Only the static build includes this file (forced with
 * -include, so that no other file names the libc it is built against);
 * under glibc it declares nothing.
 */
#ifndef TEND_MUSL_H
#define TEND_MUSL_H

#ifndef __GLIBC__
#include <stddef.h>
#include <stdint.h>
#include <spawn.h>

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE	(1 << 0)
#endif

uint32_t	arc4random(void);
void		arc4random_buf(void *, size_t);
uint32_t	arc4random_uniform(uint32_t);
const char	*sigabbrev_np(int);
int		renameat2(int, const char *, int, const char *, unsigned int);
int		close_range(unsigned int, unsigned int, int);
int		posix_spawn_file_actions_addclosefrom_np(
		    posix_spawn_file_actions_t *, int);
#endif

#endif
