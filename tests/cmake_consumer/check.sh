#!/usr/bin/env bash
# check.sh BUILD — weft as an embedder gets it (scripts/dev test-cmake).
#
# BUILD is a configured weft build (scripts/dev: release, library only)
# whose prefix does not exist on this machine.  It is installed into a
# staging folder, and the installed tree is then moved elsewhere, so that
# any absolute path left in a package file points at nothing and fails.
# Then, against the moved prefix:
#
#  1. CMake: find_package(weft 1.0) and this folder's C and C++ programs,
#     linked with weft::weft (the shared library, found by the rpath CMake
#     sets) and weft::weft_static (no libweft.so needed), built and run;
#     weft::hook under --as-needed keeps libweft-hook.so; a request for
#     weft 2.0 and a prefix without its libweft.so are refused, saying why.
#  2. pkg-config: the commands of docs/building.md (rpath from
#     --variable=libdir; the static library by its path), the moved
#     tree's prefix defined on their line.
#  3. meson: tests/meson_parent with weft as its subproject: dependency
#     ('weft') finds it (the static library), dependency('weft-hook') the
#     hook, and weft's tests, examples and bench are not in the parent's
#     build unless the parent asks (-Dweft:examples=true).
#
# The first failure ends it with exit 1, saying what failed.
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:?usage: check.sh BUILD}" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
log=$work/log

fail() {
    echo "check.sh: $*" >&2
    [ -s "$log" ] && tail -n 30 "$log" >&2
    exit 1
}
# quiet CMD...: run CMD with its output in $log, shown only if it fails.
quiet() { "$@" >"$log" 2>&1 || fail "failed: $*"; }
# needed PROG: its NEEDED entries, one a line.  (Read into a variable
# before grep -q looks at them: grep -q stops at the first match, and the
# writer's SIGPIPE would fail the pipe under pipefail.)
needed() { readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'; }
# say WHAT: one line of progress, with the seconds so far (CI's budget).
say() { echo "[$SECONDS s] $*"; }

prefix=$(meson introspect "$build" --buildoptions | python3 -c '
import json, sys
print(next(o["value"] for o in json.load(sys.stdin) if o["name"] == "prefix"))')
[ ! -e "$prefix" ] ||
    fail "the build's prefix $prefix exists here: it must not (see the top)"
quiet ninja -C "$build"
quiet meson install -C "$build" --destdir "$work/stage" --quiet
moved=$work/moved/somewhere/else
mkdir -p "$(dirname "$moved")"
mv "$work/stage$prefix" "$moved"
config=$(find "$moved" -name weftConfig.cmake)
[ -n "$config" ] || fail "no weftConfig.cmake installed under $prefix"
libdir=$(dirname "$(dirname "$(dirname "$config")")")
say "installed for $prefix, moved to $moved"

# --- 1. CMake
cmake_args=(-DCMAKE_PREFIX_PATH="$moved" -DWEFT_EXPECT_DIR="$moved"
            -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF -DCMAKE_BUILD_TYPE=Release)
for link in shared static; do
    b=$work/cmake-$link
    quiet cmake -S "$src/tests/cmake_consumer" -B "$b" -DWEFT_LINK=$link \
        "${cmake_args[@]}"
    quiet cmake --build "$b" -j 2
    for prog in consumer_c consumer_cxx; do
        out=$("$b/$prog") || fail "$link $prog exited $?"
        say "cmake $link: $out"
        case $link in
        shared)
            grep -qx libweft.so.1 <<<"$(needed "$b/$prog")" ||
                fail "$link $prog does not need libweft.so.1"
            # The loader took it from the moved prefix (CMake's rpath).
            grep -qF "libweft.so.1 => $libdir/" <<<"$(ldd "$b/$prog")" ||
                fail "$link $prog: libweft.so.1 not from $libdir: $(ldd "$b/$prog")"
            ;;
        static)
            ! grep -q '^libweft' <<<"$(needed "$b/$prog")" ||
                fail "$link $prog needs a shared libweft"
            # Nor liburcu's (its static archives: docs/building.md).
            ! grep -q '^liburcu' <<<"$(needed "$b/$prog")" ||
                fail "$link $prog needs a shared liburcu"
            ;;
        esac
    done
done
hook=$work/cmake-shared/consumer_hook
[ -x "$hook" ] || fail "no weft::hook target (libweft-hook.so not installed?)"
grep -qx libweft-hook.so.1 <<<"$(needed "$hook")" ||
    fail "weft::hook under --as-needed: libweft-hook.so.1 was dropped"
out=$("$hook") || fail "consumer_hook exited $?"
say "cmake hook: $out"

# What the package refuses: another major version, and a prefix that has
# lost its library (the message must name the missing file).  A project
# with no language, so no compiler to detect: the checks come before the
# package needs one.  Without a compiler CMake does not know the
# multiarch folder (lib/x86_64-linux-gnu) to search, so weft_DIR names
# the package's folder.
mkdir "$work/refuse"
cat >"$work/refuse/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.16)
project(refuse NONE)
find_package(weft ${WANT} REQUIRED)
CMAKE
! cmake -S "$work/refuse" -B "$work/refuse-2" -DWANT=2.0 \
    -Dweft_DIR="$(dirname "$config")" >"$log" 2>&1 || fail "find_package(weft 2.0) succeeded"
grep -q 'version: 1\.0' "$log" || fail "find_package(weft 2.0): no version said"
mv "$libdir/libweft.so.1.0.0" "$work/hidden.so"
! cmake -S "$work/refuse" -B "$work/refuse-lost" -DWANT=1.0 \
    -Dweft_DIR="$(dirname "$config")" >"$log" 2>&1 || fail "a prefix without libweft.so was found"
# (CMake wraps the message: read it as one line.)
grep -q 'libweft\.so\.1\.0\.0 is not' <<<"$(tr -s ' \n' ' ' <"$log")" ||
    fail "a prefix without libweft.so: the message does not name it"
mv "$work/hidden.so" "$libdir/libweft.so.1.0.0"
say "cmake: weft 2.0 and a prefix without its library refused"

# --- 2. pkg-config (docs/building.md)
export PKG_CONFIG_PATH=$libdir/pkgconfig
# A moved tree: its prefix given as the .pc file's prefix variable
# (pkgconf's --define-prefix guesses it from the .pc file's place, and
# guesses wrong in a multiarch libdir).
pc() { pkg-config --define-variable=prefix="$moved" "$@" weft; }
quiet cc -std=c11 -o "$work/pc_app" "$src/tests/cmake_consumer/consumer.c" \
    $(pc --cflags --libs) -Wl,-rpath,"$(pc --variable=libdir)"
out=$("$work/pc_app") || fail "the pkg-config build exited $?"
say "pkg-config: $out"
quiet cc -std=c11 -o "$work/pc_static" "$src/tests/cmake_consumer/consumer.c" \
    $(pc --cflags) "$(pc --variable=libdir)/libweft.a" -l:liburcu-common.a \
    -pthread
! grep -q '^libweft\|^liburcu' <<<"$(needed "$work/pc_static")" ||
    fail "the static pkg-config build needs a shared libweft or liburcu"
out=$("$work/pc_static") || fail "the static pkg-config build exited $?"
say "pkg-config, static: $out"
unset PKG_CONFIG_PATH

# --- 3. weft as a meson subproject
parent=$work/parent
mkdir -p "$parent/subprojects"
cp "$src/tests/meson_parent/meson.build" "$src/tests/cmake_consumer/consumer.c" \
    "$parent/"
ln -s "$src" "$parent/subprojects/weft"
# Unoptimised: this proves the wiring, and -O0 compiles weft in half the
# time.
quiet meson setup "$work/parent-build" "$parent" -Dbuildtype=debug
tests=$(meson introspect "$work/parent-build" --tests | python3 -c '
import json, sys
print(" ".join(sorted(t["name"] for t in json.load(sys.stdin))))')
[ "$tests" = "parent_app parent_hook_app" ] ||
    fail "as a subproject, weft added tests to the parent's: $tests"
targets=$(meson introspect "$work/parent-build" --targets | python3 -c '
import json, sys
print(" ".join(sorted(t["name"] for t in json.load(sys.stdin))))')
for t in test_coro echo_server weft-bench; do
    ! grep -qw -- "$t" <<<"$targets" ||
        fail "as a subproject, weft builds $t (of its tests, examples, bench)"
done
quiet ninja -C "$work/parent-build" parent_app parent_hook_app
out=$("$work/parent-build/parent_app") || fail "the parent's program exited $?"
"$work/parent-build/parent_hook_app" >/dev/null ||
    fail "the parent's program with weft-hook exited $?"
grep -qx libweft-hook.so.1 <<<"$(needed "$work/parent-build/parent_hook_app")" ||
    fail "dependency('weft-hook') did not link libweft-hook.so"
! grep -q '^libweft' <<<"$(needed "$work/parent-build/parent_app")" ||
    fail "the subproject's weft_dep should link libweft statically"
say "meson subproject: $out; dependency('weft') and dependency('weft-hook') found it, and the parent holds none of weft's tests, examples or bench"
# Asked for, the examples come back (only configured here: building them
# would add a minute).
quiet meson setup --reconfigure "$work/parent-build" -Dweft:examples=true
quiet meson introspect "$work/parent-build" --tests
grep -q '"echo_server"' "$log" ||
    fail "-Dweft:examples=true did not bring weft's examples"
say "meson subproject: -Dweft:examples=true brings them"
say "ok"
