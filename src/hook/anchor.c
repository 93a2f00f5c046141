/*
 * hook/anchor.c — compiled into each program of this tree that links the
 * interposition library (meson.build, weft_hook_dep): one reference to
 * it, so that the linker's --as-needed, meson's default, keeps it although
 * the program calls none of its functions.  Programs outside the tree get
 * --no-as-needed from pkg-config instead.
 */
extern const int weft_hook_linked;
__attribute__((used)) const int *const weft__hook_anchor = &weft_hook_linked;
