/*
 * void weft__coro_switch(void **save_sp, void *load_sp)
 *
 * The aarch64 twin of coro_switch_x86_64.S. Saves what AAPCS64 says a
 * callee must preserve -- x19-x28, x29 (fp), sp, d8-d15 (the low 64 bits of
 * v8-v15; the rest of each vector register is caller-saved) and FPCR (its
 * rounding mode, flush-to-zero, default-NaN and trap-enable bits) -- plus the
 * return address on the current stack, stores sp in *save_sp, then restores
 * the same set from the frame at load_sp and continues at that frame's
 * saved address. Everything else is caller-saved, so the C caller already
 * assumes it is clobbered. FPSR is not switched: it holds only status (the
 * cumulative exception flags), which on x86 ride along inside MXCSR, so
 * here a flag raised before a yield may be seen or cleared by the loop.
 *
 * Frame at a saved sp, low to high, 8 bytes a slot (176 bytes, keeping sp
 * 16-byte aligned): d8-d15, x19-x28, x29, x30, FPCR, the address to continue
 * at. x30 and that address are the same return address in a frame saved
 * here; coro_switch.h's weft__coro_frame builds the same frame for a
 * coroutine that has not run yet with x29 = x30 = 0 and the address of its
 * entry function, so the entry starts with an empty call chain. Because
 * both sides use this one layout, the CFI below stays true after sp is
 * swapped.
 *
 * Choices (none measured on arm64 hardware yet: the suite runs this under
 * qemu-user, whose timings mean nothing; bench/coro_switch.c is the
 * measurement to take on a real machine):
 * - The saved address is left through "ret x17". The x86 switch jumps
 *   instead of returning because that measured faster there; here a BR to
 *   a return address would fault in a BTI build (nothing after a BL is a
 *   landing pad), while RET is never checked. Whether a BR would predict
 *   better on some core is unmeasured.
 * - FPCR is written only when the other side's differs, as glibc's aarch64
 *   fenv code does (sysdeps/aarch64/fpu/fenv_private.h): a system register
 *   write can cost far more than the read, and the two sides almost always
 *   agree. (The x86 switch loads MXCSR unconditionally: measured cheaper.)
 *
 * Branch protection, when the compiler targets it (-mbranch-protection=bti,
 * pac-ret or standard, as a distribution's hardening flags may set):
 * - BTI: the entry starts with "bti c", so it may be called through a
 *   pointer from guarded pages.
 * - pac-ret: the return address is signed with the A key and sp on entry
 *   (paciasp) before it is stored, and authenticated against the restored
 *   sp before it is used, so a suspended coroutine's saved frame is no
 *   easier to redirect than any C function's saved return address;
 *   weft__coro_frame signs its entry address the same way. The A key is
 *   used whichever key the C code uses: the signature is this file's own.
 * - The object then carries a .note.gnu.property with exactly those bits,
 *   so linking it keeps the program marked as BTI (and PAC) compatible;
 *   without the note the linker would drop the marking for the whole
 *   binary. It never claims GCS (the Guarded Control Stack, bit 2): a
 *   return into a frame built by hand is what a shadow stack refuses -- the
 *   same reason the x86 file carries no CET note -- so a GCS build of weft
 *   stays unmarked.
 */
#if defined(__aarch64__)

#if defined(__ARM_FEATURE_BTI_DEFAULT) && __ARM_FEATURE_BTI_DEFAULT
#define CORO_BTI 1
#define CORO_BTI_C hint #34 /* bti c */
#else
#define CORO_BTI 0
#define CORO_BTI_C
#endif
#if defined(__ARM_FEATURE_PAC_DEFAULT) && __ARM_FEATURE_PAC_DEFAULT
#define CORO_PAC 1
#else
#define CORO_PAC 0
#endif

	.text
	.p2align 4
	.globl	weft__coro_switch
	.hidden	weft__coro_switch
	.type	weft__coro_switch, %function
weft__coro_switch:
	.cfi_startproc
	CORO_BTI_C
#if CORO_PAC
	hint	#25			/* paciasp: sign x30 with sp */
	.cfi_negate_ra_state
#endif
	sub	sp, sp, #176
	.cfi_def_cfa_offset 176
	stp	d8, d9, [sp, #0]
	.cfi_offset d8, -176
	.cfi_offset d9, -168
	stp	d10, d11, [sp, #16]
	.cfi_offset d10, -160
	.cfi_offset d11, -152
	stp	d12, d13, [sp, #32]
	.cfi_offset d12, -144
	.cfi_offset d13, -136
	stp	d14, d15, [sp, #48]
	.cfi_offset d14, -128
	.cfi_offset d15, -120
	stp	x19, x20, [sp, #64]
	.cfi_offset x19, -112
	.cfi_offset x20, -104
	stp	x21, x22, [sp, #80]
	.cfi_offset x21, -96
	.cfi_offset x22, -88
	stp	x23, x24, [sp, #96]
	.cfi_offset x23, -80
	.cfi_offset x24, -72
	stp	x25, x26, [sp, #112]
	.cfi_offset x25, -64
	.cfi_offset x26, -56
	stp	x27, x28, [sp, #128]
	.cfi_offset x27, -48
	.cfi_offset x28, -40
	stp	x29, x30, [sp, #144]
	.cfi_offset x29, -32
	.cfi_offset x30, -24
	mrs	x9, fpcr
	stp	x9, x30, [sp, #160]
	mov	x10, sp
	str	x10, [x0]

	mov	sp, x1
	ldp	x10, x17, [sp, #160]
	cmp	x9, x10
	b.eq	1f
	msr	fpcr, x10
1:
	ldp	d8, d9, [sp, #0]
	ldp	d10, d11, [sp, #16]
	ldp	d12, d13, [sp, #32]
	ldp	d14, d15, [sp, #48]
	ldp	x19, x20, [sp, #64]
	ldp	x21, x22, [sp, #80]
	ldp	x23, x24, [sp, #96]
	ldp	x25, x26, [sp, #112]
	ldp	x27, x28, [sp, #128]
	ldp	x29, x30, [sp, #144]
	add	sp, sp, #176
	.cfi_def_cfa_offset 0
	.cfi_restore d8
	.cfi_restore d9
	.cfi_restore d10
	.cfi_restore d11
	.cfi_restore d12
	.cfi_restore d13
	.cfi_restore d14
	.cfi_restore d15
	.cfi_restore x19
	.cfi_restore x20
	.cfi_restore x21
	.cfi_restore x22
	.cfi_restore x23
	.cfi_restore x24
	.cfi_restore x25
	.cfi_restore x26
	.cfi_restore x27
	.cfi_restore x28
	.cfi_restore x29
	.cfi_restore x30
#if CORO_PAC
	mov	x16, sp
	hint	#12			/* autia1716: authenticate x17 with x16 */
#endif
	ret	x17
	.cfi_endproc
	.size	weft__coro_switch, .-weft__coro_switch

#if CORO_BTI || CORO_PAC
	/* GNU_PROPERTY_AARCH64_FEATURE_1_AND: BTI = 1, PAC = 2 (see above). */
	.pushsection .note.gnu.property, "a"
	.p2align 3
	.word	4			/* name size */
	.word	16			/* descriptor size */
	.word	5			/* NT_GNU_PROPERTY_TYPE_0 */
	.asciz	"GNU"
	.word	0xc0000000		/* GNU_PROPERTY_AARCH64_FEATURE_1_AND */
	.word	4			/* its data size */
	.word	(CORO_BTI * 1) | (CORO_PAC * 2)
	.word	0			/* padding to 8 bytes */
	.popsection
#endif

#endif

	.section .note.GNU-stack, "", %progbits
