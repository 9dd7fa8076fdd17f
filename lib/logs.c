/* placeholder, replaced below */
#include "api.h"
void logs_raw(struct http_conn *c, struct http_req *r) { (void)r; http_reply_error(c, 404, "not_found", "x"); }
void logs_get(struct http_conn *c, struct http_req *r) { (void)r; http_reply_error(c, 404, "not_found", "x"); }
void logs_exec(struct http_conn *c, struct http_req *r) { (void)r; http_reply_error(c, 404, "not_found", "x"); }
void logs_metrics(struct http_conn *c, struct http_req *r) { (void)r; http_reply_error(c, 404, "not_found", "x"); }
