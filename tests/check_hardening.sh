#!/bin/sh
# check_hardening.sh READELF LIB CPU FORTIFY [CET_PROBE]
#
# Reads back from the built shared library the hardening that meson.build
# asks for (docs/building.md, "Hardening"):
#   - GNU_STACK is RW, not RWE: no executable stack (every .S file carries
#     a .note.GNU-stack section, or the linker would make the stack RWE);
#   - GNU_RELRO and BIND_NOW: full RELRO;
#   - __stack_chk_fail is referenced (-fstack-protector-strong), and, when
#     FORTIFY is "fortify", some __*_chk function (_FORTIFY_SOURCE=2);
#   - on x86_64, no IBT or SHSTK claim in the GNU property notes.  The
#     context switch is compatible with neither: it resumes a context with
#     an indirect jmp to a saved return address (no endbr64 there, and no
#     ret for the shadow stack to match).  The linker keeps a feature only
#     if every object claims it, so the library is right as long as the
#     switch's own object never claims one; CET_PROBE is that object
#     assembled with -fcf-protection=full, where a claim would show.
# The notes found are printed either way.
set -eu

readelf=$1 lib=$2 cpu=$3 fortify=$4 probe=${5:-}
failed=0
fail() {
    echo "FAIL: $*"
    failed=1
}

stack=$("$readelf" -lW "$lib" | grep GNU_STACK || true)
echo "program header: ${stack:-no GNU_STACK}"
case "$stack" in
*" RW "*) ;;
"") fail "no GNU_STACK header: the stack would be executable" ;;
*) fail "GNU_STACK is not RW: the stack would be executable" ;;
esac

"$readelf" -lW "$lib" | grep -q GNU_RELRO || fail "no GNU_RELRO segment"
dynamic=$("$readelf" -dW "$lib")
echo "$dynamic" | grep -Eq 'BIND_NOW|Flags:.* NOW' ||
    fail "no BIND_NOW: only partial RELRO"

symbols=$("$readelf" -W --dyn-syms "$lib")
echo "$symbols" | grep -q ' __stack_chk_fail' ||
    fail "no __stack_chk_fail reference: stack protector not applied"
if [ "$fortify" = fortify ]; then
    echo "$symbols" | grep -Eq ' __[a-z]+_chk@' ||
        fail "no __*_chk reference: _FORTIFY_SOURCE not applied"
fi

# x86 feature claims of a file, e.g. "IBT, SHSTK"; empty if none.
features() {
    "$readelf" -nW "$1" | sed -n 's/.*x86 feature: *//p' | sort -u |
        tr '\n' ' '
}

echo "GNU property notes of the library:"
"$readelf" -nW "$lib" | grep 'Properties:' || echo "  none"
if [ "$cpu" = x86_64 ]; then
    for f in "$lib" $probe; do
        claims=$(features "$f")
        echo "x86 features claimed by $(basename "$f"): ${claims:-none}"
        case "$claims" in
        *SHSTK*) fail "$f claims SHSTK; the context switch is not shadow-stack compatible" ;;
        esac
        case "$claims" in
        *IBT*) fail "$f claims IBT; the context switch jumps to return addresses, which have no endbr64" ;;
        esac
    done
fi

exit $failed
