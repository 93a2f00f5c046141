/*
 * base/symbols.h — naming code addresses, for the dump (internal).
 *
 * weft__syms_name gives "function+0xOFF (module+0xOFF)": the function from
 * the symbol table of the module (the executable or shared object) that
 * holds the address, its .symtab where the file still has one (static and
 * hidden functions too), else its dynamic symbols (dladdr's answer), else
 * only "module+0xOFF".  The module offset is what `addr2line -e module`
 * and gdb take to give file and line, which weft leaves to them: its
 * run-time dependencies are pthreads and liburcu, and reading DWARF line
 * tables is a library's worth of code.
 *
 * A session maps the modules it reads (read-only, as files) and keeps
 * them until weft__syms_close.  Not async-signal-safe (dl_iterate_phdr,
 * open, mmap): the dump runs on an ordinary thread.
 */
#ifndef WEFT_BASE_SYMBOLS_H
#define WEFT_BASE_SYMBOLS_H

#include <stddef.h>
#include <stdint.h>

#define WEFT__SYMS_MODULES 16

/* One function of a module's symbol table, in the session's index. */
struct weft__syms_fn {
    uintptr_t start, size;   /* link-time address; size 0: unknown     */
    const char *name;        /* inside the mapped file                 */
};

struct weft__syms_module {
    uintptr_t bias;          /* load address minus link-time address */
    const char *path;        /* as the loader names it ("" for the program) */
    void *map;               /* the file, or NULL if it could not be read */
    size_t size;
    struct weft__syms_fn *fns; /* its functions, by address (malloc)  */
    size_t nfns;
};

struct weft__syms {
    struct weft__syms_module mods[WEFT__SYMS_MODULES];
    unsigned n;
    char program[64];        /* the executable's file name */
};

void weft__syms_open(struct weft__syms *s);
void weft__syms_close(struct weft__syms *s);

/* The name of code address pc into buf (always terminated; "?" if no
 * module holds it).  With `ret`, pc is a return address: the function
 * looked up is the one holding pc - 1, so that a call at a function's very
 * end is named right; the offsets printed are pc's either way. */
void weft__syms_name(struct weft__syms *s, uintptr_t pc, int ret, char *buf,
                     size_t n);

#endif /* WEFT_BASE_SYMBOLS_H */
