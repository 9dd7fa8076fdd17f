/*
 * api_envd_watch: envd's watching, over lib/core/watch.c — WatchDir, a
 * server stream of FilesystemEvents, and the polling trio the Python
 * sync SDK calls (CreateWatcher, GetWatcherEvents, RemoveWatcher).
 * Lost events are data_loss, never a silent gap.
 */
#ifndef TEND_API_ENVD_WATCH_H
#define TEND_API_ENVD_WATCH_H

#include "net/http.h"

void	api_envd_watch_dir(struct http_conn *, struct http_req *);
void	api_envd_watch_create(struct http_conn *, struct http_req *);
void	api_envd_watch_events(struct http_conn *, struct http_req *);
void	api_envd_watch_remove(struct http_conn *, struct http_req *);

#endif
