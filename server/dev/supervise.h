/*
 * `weft dev` keeps serving through a crash: the dev server runs in a child,
 * and a child killed by a fatal signal (a plugin under development crashed
 * it) is started again.
 */
#ifndef WEFT_DEV_SUPERVISE_H
#define WEFT_DEV_SUPERVISE_H

/**
 * Runs serve(ctx) in a child process and restarts it whenever it dies by a
 * fatal signal (a plugin crashed it); SIGTERM/SIGINT are passed on. Returns
 * the child's exit status once it exits by itself. Call single-threaded.
 */
int weft_dev_supervise(int (*serve)(void *ctx), void *ctx);

#endif
