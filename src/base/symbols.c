/*
 * base/symbols.c — code addresses to function names from the modules' ELF
 * symbol tables (base/symbols.h).
 *
 * Every read of the file goes through a bounds check against its size:
 * the file on disk may not be the one that was loaded (replaced since), or
 * not ELF at all, and then the answer is only wrong, never a crash.
 */
#include "base/symbols.h"

#include "base/alloc.h"

#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#if UINTPTR_MAX == UINT64_MAX
typedef Elf64_Ehdr ehdr_t;
typedef Elf64_Shdr shdr_t;
typedef Elf64_Sym sym_t;
#define SYM_TYPE(i) ELF64_ST_TYPE(i)
#else
typedef Elf32_Ehdr ehdr_t;
typedef Elf32_Shdr shdr_t;
typedef Elf32_Sym sym_t;
#define SYM_TYPE(i) ELF32_ST_TYPE(i)
#endif

static const char *base_name(const char *path)
{
    const char *b = strrchr(path, '/');
    return b ? b + 1 : path;
}

void weft__syms_open(struct weft__syms *s)
{
    memset(s, 0, sizeof *s);
    /* The program's own name, which the loader does not give. */
    char path[256];
    ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
    if (n > 0) {
        path[n] = '\0';
        const char *b = base_name(path);
        size_t len = strnlen(b, sizeof s->program - 1);
        memcpy(s->program, b, len);
        s->program[len] = '\0';
    } else {
        snprintf(s->program, sizeof s->program, "(program)");
    }
}

void weft__syms_close(struct weft__syms *s)
{
    for (unsigned i = 0; i < s->n; i++) {
        if (s->mods[i].map)
            munmap(s->mods[i].map, s->mods[i].size);
        free(s->mods[i].fns);
    }
    s->n = 0;
}

/* Whether [off, off + len) lies inside a file of `size` bytes. */
static int inside(size_t size, uint64_t off, uint64_t len)
{
    return off <= size && len <= size - off;
}

static int by_start(const void *a, const void *b)
{
    const struct weft__syms_fn *x = a, *y = b;
    return x->start < y->start ? -1 : x->start > y->start;
}

/* Index the function symbols of one table (sorted by address). */
static void index_table(struct weft__syms_module *m, const sym_t *syms,
                        size_t nsyms, const char *strtab, size_t strsize)
{
    size_t n = 0;
    for (size_t i = 0; i < nsyms; i++)
        n += SYM_TYPE(syms[i].st_info) == STT_FUNC && syms[i].st_value &&
             syms[i].st_name < strsize;
    if (!n || !(m->fns = weft__malloc(n * sizeof *m->fns)))
        return;
    for (size_t i = 0; i < nsyms; i++) {
        const sym_t *y = &syms[i];
        if (SYM_TYPE(y->st_info) != STT_FUNC || !y->st_value ||
            y->st_name >= strsize ||
            !memchr(strtab + y->st_name, '\0', strsize - y->st_name))
            continue;
        m->fns[m->nfns++] = (struct weft__syms_fn){
            (uintptr_t)y->st_value, (uintptr_t)y->st_size,
            strtab + y->st_name};
    }
    qsort(m->fns, m->nfns, sizeof *m->fns, by_start);
}

/* Find the symbol table (static, else dynamic) of the mapped file. */
static void read_tables(struct weft__syms_module *m)
{
    const unsigned char *f = m->map;
    if (!inside(m->size, 0, sizeof(ehdr_t)) || memcmp(f, ELFMAG, SELFMAG))
        return;
    const ehdr_t *eh = (const ehdr_t *)f;
    if (eh->e_shentsize != sizeof(shdr_t) ||
        !inside(m->size, eh->e_shoff, (uint64_t)eh->e_shnum * sizeof(shdr_t)))
        return;
    const shdr_t *sh = (const shdr_t *)(f + eh->e_shoff);
    for (int want = SHT_SYMTAB; ; want = SHT_DYNSYM) {
        for (unsigned i = 0; i < eh->e_shnum; i++) {
            if (sh[i].sh_type != (unsigned)want || sh[i].sh_link >= eh->e_shnum)
                continue;
            const shdr_t *str = &sh[sh[i].sh_link];
            if (!inside(m->size, sh[i].sh_offset, sh[i].sh_size) ||
                !inside(m->size, str->sh_offset, str->sh_size) ||
                sh[i].sh_entsize != sizeof(sym_t) ||
                (sh[i].sh_offset & (_Alignof(sym_t) - 1)))
                continue;
            index_table(m, (const sym_t *)(f + sh[i].sh_offset),
                        sh[i].sh_size / sizeof(sym_t),
                        (const char *)f + str->sh_offset, str->sh_size);
            return;
        }
        if (want == SHT_DYNSYM)
            return;
    }
}

static void load(struct weft__syms_module *m)
{
    const char *path = m->path[0] ? m->path : "/proc/self/exe";
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    struct stat st;
    if (fstat(fd, &st) == 0 && st.st_size > 0) {
        void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p != MAP_FAILED) {
            m->map = p;
            m->size = (size_t)st.st_size;
            read_tables(m);
        }
    }
    close(fd);
}

struct find {
    uintptr_t pc;
    uintptr_t bias;
    const char *path;
    int found;
};

/* dl_iterate_phdr's callback: is pc inside one of this module's loaded
 * segments? */
static int find_module(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    struct find *f = arg;
    for (unsigned i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
        if (f->pc >= lo && f->pc - lo < ph->p_memsz) {
            f->bias = info->dlpi_addr;
            f->path = info->dlpi_name ? info->dlpi_name : "";
            f->found = 1;
            return 1;
        }
    }
    return 0;
}

static struct weft__syms_module *module_of(struct weft__syms *s, uintptr_t pc)
{
    struct find f = {pc, 0, NULL, 0};
    dl_iterate_phdr(find_module, &f);
    if (!f.found)
        return NULL;
    for (unsigned i = 0; i < s->n; i++)
        if (s->mods[i].bias == f.bias && strcmp(s->mods[i].path, f.path) == 0)
            return &s->mods[i];
    if (s->n == WEFT__SYMS_MODULES)
        return NULL;
    struct weft__syms_module *m = &s->mods[s->n++];
    memset(m, 0, sizeof *m);
    m->bias = f.bias;
    /* The loader's own string: it lives as long as the module does. */
    m->path = f.path;
    load(m);
    return m;
}

/* The function holding link-time address a, and its start: the last one
 * starting at or below a, if a is inside it (or its size is unknown, as
 * for assembler symbols without .size). */
static const char *lookup(const struct weft__syms_module *m, uintptr_t a,
                          uintptr_t *start)
{
    size_t lo = 0, hi = m->nfns;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (m->fns[mid].start <= a)
            lo = mid + 1;
        else
            hi = mid;
    }
    /* fns[lo - 1] is the last to start at or below a; among aliases at
     * one address, look back for one whose size covers a. */
    for (size_t i = lo; i-- > 0 && m->fns[i].start == m->fns[lo - 1].start;) {
        const struct weft__syms_fn *f = &m->fns[i];
        if (!f->size || a - f->start < f->size) {
            *start = f->start;
            return f->name;
        }
    }
    return NULL;
}

void weft__syms_name(struct weft__syms *s, uintptr_t pc, int ret, char *buf,
                     size_t n)
{
    uintptr_t at = ret ? pc - 1 : pc;
    struct weft__syms_module *m = module_of(s, at);
    if (!m) {
        snprintf(buf, n, "?");
        return;
    }
    uintptr_t a = pc - m->bias;
    const char *mod = m->path[0] ? base_name(m->path) : s->program;
    uintptr_t start = 0;
    const char *fn = m->nfns ? lookup(m, at - m->bias, &start) : NULL;
    if (!fn) {
        Dl_info di;
        if (dladdr((void *)at, &di) && di.dli_sname) {
            fn = di.dli_sname;
            start = (uintptr_t)di.dli_saddr - m->bias;
        }
    }
    if (fn)
        snprintf(buf, n, "%s+0x%lx (%s+0x%lx)", fn,
                 (unsigned long)(a - start), mod, (unsigned long)a);
    else
        snprintf(buf, n, "%s+0x%lx", mod, (unsigned long)a);
}
