/*
 * api_envd_fs: envd's filesystem service (filesystem.Filesystem, Connect
 * with the JSON codec: Stat, MakeDir, Move, ListDir, Remove here;
 * WatchDir, CreateWatcher, GetWatcherEvents, RemoveWatcher in
 * api_envd_watch) and its file transfer routes (GET and POST /files, in
 * api_envd_files), at the root of the socket, for the E2B SDKs: this
 * module's table routes them all.  Paths are api_envd_req's.
 */
#ifndef TEND_API_ENVD_FS_H
#define TEND_API_ENVD_FS_H

#include "net/http.h"

extern const struct http_route api_envd_fs_routes[];

#endif
