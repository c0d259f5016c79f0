/* Several names at one address, the way old and new toolchains leave them (see build.sh):
 * gcc 2's `gcc2_compiled.` local label (STT_NOTYPE, STB_LOCAL) at the first byte of the first
 * function of each object, a global alias, a weak alias and a local (static) alias. */
#include <stdlib.h>

/* The label opens foo's own section, so it is at foo's first byte (-fno-toplevel-reorder keeps
 * this before foo). */
__asm__(".section .text.foo,\"ax\",@progbits\ngcc2_compiled.:\n\t.previous");

__attribute__((noinline, section(".text.foo"))) int foo(int x) {
    return x * 3 + 1;
}

/* More code after foo in its section, so the zero-size label (which covers the rest of its
 * section as far as the symbol table can tell) reaches past foo's end. */
__attribute__((noinline, section(".text.foo"))) int after(int x) {
    return x ^ 0x55;
}

/* Another name for foo: global, weak, and local. */
int foo_alias(int) __attribute__((alias("foo")));
int foo_weak(int) __attribute__((weak, alias("foo")));
static int foo_local(int) __attribute__((alias("foo"), used));

/* A static function whose DWARF name is the only local one among the names at its first byte:
 * a global and a weak alias (both after it in .symtab, so the symbol rule alone, like
 * llvm-symbolizer, picks one of them) and a global untyped label. The DWARF subprogram names
 * baz; binutils and elfutils say baz. */
__asm__(".section .text.baz,\"ax\",@progbits\n\t.globl baz_label\nbaz_label:\n\t.previous");

__attribute__((noinline, used, section(".text.baz"))) static int baz(int x) {
    return x * 7 - 2;
}

int baz_global(int) __attribute__((alias("baz")));
int baz_weak(int) __attribute__((weak, alias("baz")));

__attribute__((noinline)) int bar(int x) {
    return foo(x) - after(x) + baz(x);
}

int main(int argc, char **argv) {
    (void)argv;
    return bar(argc) == 1000 ? EXIT_FAILURE : EXIT_SUCCESS;
}
