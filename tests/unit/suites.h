/*
 * The unit test suites, one per lib/ module.  Add a line per module:
 * X(name) declares and runs Suite *name_suite(void).
 */
#define TEND_SUITES \
	X(buf) \
	X(log) \
	X(codec) \
	X(cursor) \
	X(logstore) \
	X(fsutil) \
	X(files) \
	X(tar) \
	X(boot) \
	X(http) \
	X(spawn) \
	X(record) \
	X(proc) \
	X(hclient) \
	X(ws) \
	X(pty) \
	X(term)
