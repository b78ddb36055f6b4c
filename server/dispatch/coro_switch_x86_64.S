/*
 * void weft__coro_switch(void **save_sp, void *load_sp)
 *
 * Saves what the SysV x86-64 psABI says a callee must preserve -- rbx, rbp,
 * r12-r15, rsp, MXCSR (its control bits; the status flags ride along) and the
 * x87 control word -- on the current stack, stores rsp in *save_sp, then
 * restores the same set from the frame at load_sp and continues at that
 * frame's return address. Everything else is caller-saved, so the C caller
 * already assumes it is clobbered.
 *
 * Frame at a saved sp, low to high: mxcsr (4 bytes), x87 cw (2), pad (2),
 * r15, r14, r13, r12, rbx, rbp, return address. coro.c builds the same frame
 * for a coroutine that has not run yet. Because both sides use this one
 * layout, the CFI below stays true after rsp is swapped.
 *
 * Two measured choices (bench/coro_switch.c, Zen 4, ns per switch):
 * - The return address is popped and jumped to rather than "ret"-ed: a ret
 *   into the other context always misses the return-stack predictor, while
 *   the indirect jump's target is learnt. 11.3 -> 8.4.
 * - ldmxcsr and fldcw run unconditionally. Skipping them when the value is
 *   unchanged saved nothing in the common case and cost 9 ns when it did
 *   change.
 *
 * The entry has ENDBR for IBT. The object deliberately carries no
 * .note.gnu.property: jumping into a frame built by hand is incompatible
 * with CET (shadow stacks, and IBT at the jump target), and the missing note
 * makes the linker mark the output as such.
 */
#if defined(__x86_64__)

	.text
	.p2align 4
	.globl	weft__coro_switch
	.hidden	weft__coro_switch
	.type	weft__coro_switch, @function
weft__coro_switch:
	.cfi_startproc
	endbr64
	pushq	%rbp
	.cfi_adjust_cfa_offset 8
	.cfi_rel_offset %rbp, 0
	pushq	%rbx
	.cfi_adjust_cfa_offset 8
	.cfi_rel_offset %rbx, 0
	pushq	%r12
	.cfi_adjust_cfa_offset 8
	.cfi_rel_offset %r12, 0
	pushq	%r13
	.cfi_adjust_cfa_offset 8
	.cfi_rel_offset %r13, 0
	pushq	%r14
	.cfi_adjust_cfa_offset 8
	.cfi_rel_offset %r14, 0
	pushq	%r15
	.cfi_adjust_cfa_offset 8
	.cfi_rel_offset %r15, 0
	subq	$8, %rsp
	.cfi_adjust_cfa_offset 8
	stmxcsr	(%rsp)
	fnstcw	4(%rsp)
	movq	%rsp, (%rdi)

	movq	%rsi, %rsp
	ldmxcsr	(%rsp)
	fldcw	4(%rsp)
	addq	$8, %rsp
	.cfi_adjust_cfa_offset -8
	popq	%r15
	.cfi_adjust_cfa_offset -8
	.cfi_restore %r15
	popq	%r14
	.cfi_adjust_cfa_offset -8
	.cfi_restore %r14
	popq	%r13
	.cfi_adjust_cfa_offset -8
	.cfi_restore %r13
	popq	%r12
	.cfi_adjust_cfa_offset -8
	.cfi_restore %r12
	popq	%rbx
	.cfi_adjust_cfa_offset -8
	.cfi_restore %rbx
	popq	%rbp
	.cfi_adjust_cfa_offset -8
	.cfi_restore %rbp
	popq	%rdx
	.cfi_adjust_cfa_offset -8
	.cfi_register %rip, %rdx
	jmp	*%rdx
	.cfi_endproc
	.size	weft__coro_switch, .-weft__coro_switch

#endif

	.section .note.GNU-stack, "", @progbits
