/* The serve command (engine/cmd/serve.c): argv after "serve"; the
 * process's exit code. */
#ifndef KIQ_CMD_SERVE_H
#define KIQ_CMD_SERVE_H

int kiq_cmd_serve(int argc, char **argv);
/* The descriptor limit raised to the hard limit (a broker holds one per
 * connection and segment; the usual soft limit of 1024 is too low). */
void kiq_cmd_raise_fd_limit(void);

#endif
