/*
 * void wt_regs_switch(void **save_sp, void *load_sp, const uint64_t *in, uint64_t *out)
 *
 * Calls weft__coro_switch(save_sp, load_sp) with every register the switch
 * must preserve set from in[] and, when the switch comes back, writes what
 * those registers then hold to out[]; its own caller's values are kept
 * aside and put back, as the ABI wants. Values the compiler chose could
 * never show a register the switch forgot: the other side clobbers them all
 * through this same function with other values.
 *
 * in[]/out[] (WT_NREGS in coro_switch.c):
 *   aarch64: x19-x28, x29, d8-d15, FPCR                      (20)
 *   x86-64:  rbx, rbp, r12-r15, MXCSR, x87 control word      (8)
 */
#if defined(__aarch64__)

	.text
	.p2align 4
	.globl	wt_regs_switch
	.type	wt_regs_switch, %function
wt_regs_switch:
	.cfi_startproc
	hint	#34			/* bti c (a NOP without BTI) */
	stp	x29, x30, [sp, #-176]!
	.cfi_def_cfa_offset 176
	.cfi_offset x29, -176
	.cfi_offset x30, -168
	mov	x29, sp
	stp	x19, x20, [sp, #16]
	stp	x21, x22, [sp, #32]
	stp	x23, x24, [sp, #48]
	stp	x25, x26, [sp, #64]
	stp	x27, x28, [sp, #80]
	stp	d8, d9, [sp, #96]
	stp	d10, d11, [sp, #112]
	stp	d12, d13, [sp, #128]
	stp	d14, d15, [sp, #144]
	mrs	x9, fpcr
	stp	x9, x3, [sp, #160]

	ldp	x19, x20, [x2, #0]
	ldp	x21, x22, [x2, #16]
	ldp	x23, x24, [x2, #32]
	ldp	x25, x26, [x2, #48]
	ldp	x27, x28, [x2, #64]
	ldp	d8, d9, [x2, #88]
	ldp	d10, d11, [x2, #104]
	ldp	d12, d13, [x2, #120]
	ldp	d14, d15, [x2, #136]
	ldr	x9, [x2, #152]
	msr	fpcr, x9
	ldr	x29, [x2, #80]
	bl	weft__coro_switch

	ldr	x3, [sp, #168]
	stp	x19, x20, [x3, #0]
	stp	x21, x22, [x3, #16]
	stp	x23, x24, [x3, #32]
	stp	x25, x26, [x3, #48]
	stp	x27, x28, [x3, #64]
	str	x29, [x3, #80]
	stp	d8, d9, [x3, #88]
	stp	d10, d11, [x3, #104]
	stp	d12, d13, [x3, #120]
	stp	d14, d15, [x3, #136]
	mrs	x9, fpcr
	str	x9, [x3, #152]

	ldr	x9, [sp, #160]
	msr	fpcr, x9
	ldp	x19, x20, [sp, #16]
	ldp	x21, x22, [sp, #32]
	ldp	x23, x24, [sp, #48]
	ldp	x25, x26, [sp, #64]
	ldp	x27, x28, [sp, #80]
	ldp	d8, d9, [sp, #96]
	ldp	d10, d11, [sp, #112]
	ldp	d12, d13, [sp, #128]
	ldp	d14, d15, [sp, #144]
	ldp	x29, x30, [sp], #176
	.cfi_def_cfa_offset 0
	.cfi_restore x29
	.cfi_restore x30
	ret
	.cfi_endproc
	.size	wt_regs_switch, .-wt_regs_switch

#if defined(__ARM_FEATURE_BTI_DEFAULT) && __ARM_FEATURE_BTI_DEFAULT
	/* Marked BTI-compatible (it starts with bti c) so this object does not
	 * unmark the branch-protected test build; it signs nothing, hence no PAC bit. */
	.pushsection .note.gnu.property, "a"
	.p2align 3
	.word	4, 16, 5
	.asciz	"GNU"
	.word	0xc0000000, 4, 1, 0
	.popsection
#endif

#elif defined(__x86_64__)

	.text
	.p2align 4
	.globl	wt_regs_switch
	.type	wt_regs_switch, @function
wt_regs_switch:
	.cfi_startproc
	endbr64
	pushq	%rbp
	.cfi_adjust_cfa_offset 8
	pushq	%rbx
	.cfi_adjust_cfa_offset 8
	pushq	%r12
	.cfi_adjust_cfa_offset 8
	pushq	%r13
	.cfi_adjust_cfa_offset 8
	pushq	%r14
	.cfi_adjust_cfa_offset 8
	pushq	%r15
	.cfi_adjust_cfa_offset 8
	subq	$24, %rsp		/* own mxcsr, x87 cw, out; rsp % 16 == 0 at the call */
	.cfi_adjust_cfa_offset 24
	stmxcsr	0(%rsp)
	fnstcw	4(%rsp)
	movq	%rcx, 8(%rsp)

	movq	0(%rdx), %rbx
	movq	8(%rdx), %rbp
	movq	16(%rdx), %r12
	movq	24(%rdx), %r13
	movq	32(%rdx), %r14
	movq	40(%rdx), %r15
	ldmxcsr	48(%rdx)
	fldcw	56(%rdx)
	call	weft__coro_switch

	movq	8(%rsp), %rcx
	movq	%rbx, 0(%rcx)
	movq	%rbp, 8(%rcx)
	movq	%r12, 16(%rcx)
	movq	%r13, 24(%rcx)
	movq	%r14, 32(%rcx)
	movq	%r15, 40(%rcx)
	movq	$0, 48(%rcx)
	movq	$0, 56(%rcx)
	stmxcsr	48(%rcx)
	fnstcw	56(%rcx)

	ldmxcsr	0(%rsp)
	fldcw	4(%rsp)
	addq	$24, %rsp
	.cfi_adjust_cfa_offset -24
	popq	%r15
	.cfi_adjust_cfa_offset -8
	popq	%r14
	.cfi_adjust_cfa_offset -8
	popq	%r13
	.cfi_adjust_cfa_offset -8
	popq	%r12
	.cfi_adjust_cfa_offset -8
	popq	%rbx
	.cfi_adjust_cfa_offset -8
	popq	%rbp
	.cfi_adjust_cfa_offset -8
	ret
	.cfi_endproc
	.size	wt_regs_switch, .-wt_regs_switch

#endif

	.section .note.GNU-stack, "", %progbits
