/*
 * api_envd_fs: envd's filesystem service (filesystem.Filesystem, Connect
 * with the JSON codec: Stat, MakeDir, Move, ListDir, Remove, WatchDir,
 * CreateWatcher, GetWatcherEvents, RemoveWatcher) and its file transfer
 * routes (GET and POST /files), at the root of the socket, for the E2B
 * SDKs.  Paths are resolved as envd resolves them (lib/envd.c), then
 * confined to the files root as tend's file routes are (lib/files.c);
 * watching is lib/watch.c's.
 */
#ifndef TEND_API_ENVD_FS_H
#define TEND_API_ENVD_FS_H

#include <sys/stat.h>

#include "net/http.h"

/*
 * Go's os.FileMode.String() of m, as envd's "permissions" shows it:
 * "-rw-r--r--", "drwxr-xr-x", "Lrwxrwxrwx", "dtrwxrwxrwx", "urwxr-xr-x".
 */
void	api_envd_fs_perm(mode_t m, char out[24]);

extern const struct http_route api_envd_fs_routes[];

#endif
