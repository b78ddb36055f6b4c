/* What coro_switch.c and switch_probes.c share. */
#ifndef WT_SWITCH_PROBES_H
#define WT_SWITCH_PROBES_H

#include <stdint.h>

/** Records a failure of the running test unless ok (never aborts: coroutines may call it). */
void wt_check(int ok, const char *test, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/** Set by wt_check for the running test. */
extern int wt_failed_now;
/** Set by a test that could not run here, to why. */
extern const char *wt_skipped_now;

/** regs.S: weft__coro_switch with every preserved register set from in[], read back into out[]. */
void wt_regs_switch(void **save_sp, void *load_sp, const uint64_t *in, uint64_t *out);

/* The probes of weft__coro_switch and weft__coro_frame alone (switch_probes.c). */
void wt_test_registers(void);
void wt_test_new_frame(void);
void wt_test_pac(void);
void wt_test_bti(void);

#endif
