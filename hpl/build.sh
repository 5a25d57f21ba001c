#!/bin/sh
# Build HPL for linalg-io: libhpl-linalg-io.so (HPL with lio_hpl.c, loaded by
# `lu --algo hpl`) and xhpl (HPL's own driver, for the byte check that counts HPL as its
# own MPI program), from HPC Challenge's tarball (hpcc-*.tar.gz: Debian's
# hpcc_*.orig.tar.gz, whose hpl/ is HPL 2.0) or from netlib's hpl-2.x tarball.
#
#   hpl/build.sh SOURCE.tar.gz OUTDIR
#
# MPICC (default: mpicc on PATH) compiles and links against your MPI; BLAS_LIBS (default
# -lopenblas) is the CBLAS to link. `make hpl` runs it with the venv's Open MPI and
# Debian's OpenBLAS.
set -eu
tarball=$1
out=$2
here=$(cd "$(dirname "$0")" && pwd)
MPICC=${MPICC:-mpicc}
BLAS_LIBS=${BLAS_LIBS:--lopenblas}
# HPL 2.0 calls two MPI-1 functions that MPI-3 removed (Open MPI 5 has neither): their
# successors take the same arguments.
CFLAGS="-O3 -fPIC -DHPL_CALL_CBLAS -DHPL_DETAILED_TIMING -Werror=implicit-function-declaration
  -DMPI_Type_struct=MPI_Type_create_struct -DMPI_Address=MPI_Get_address"

work="$out/src"
rm -rf "$work" && mkdir -p "$work" "$out/obj"
tar xzf "$tarball" -C "$work"
top=$(find "$work" -mindepth 1 -maxdepth 1 -type d | head -n 1)
if [ -d "$top/hpl/src" ]; then
  hpl="$top/hpl"; extra_inc="-I$top/include"
  version="$(sed -n 's/^ *\(HPL [0-9][0-9.]*\).*/\1/p' "$hpl/HISTORY" | head -n 1) ($(basename "$top"))"
else
  hpl="$top"; extra_inc=""
  version="$(sed -n 's/^ *\(HPL [0-9][0-9.a-z]*\).*/\1/p' "$hpl/HISTORY" | head -n 1)"
fi
[ -d "$hpl/src/pgesv" ] || { echo "hpl/build.sh: no HPL sources (src/pgesv) in $tarball" >&2; exit 1; }
inc="-I$hpl/include $extra_inc"

objs=""
for c in "$hpl"/src/*/*.c "$hpl"/testing/matgen/*.c "$hpl"/testing/pmatgen/*.c \
         "$hpl"/testing/ptimer/*.c "$hpl"/testing/timer/*.c; do
  o="$out/obj/$(basename "$c" .c).o"
  $MPICC $CFLAGS $inc -c "$c" -o "$o"
  objs="$objs $o"
done
$MPICC $CFLAGS $inc "-DLIO_HPL_VERSION=\"$version\"" -c "$here/lio_hpl.c" -o "$out/obj/lio_hpl.o"
$MPICC -shared -Wl,--no-undefined -o "$out/libhpl-linalg-io.so" $objs "$out/obj/lio_hpl.o" $BLAS_LIBS -lm

tests=""
for c in "$hpl"/testing/ptest/*.c; do
  o="$out/obj/$(basename "$c" .c).o"
  $MPICC $CFLAGS $inc -c "$c" -o "$o"
  tests="$tests $o"
done
if grep -q "HPL_main" "$hpl/testing/ptest/HPL_pddriver.c"; then   # HPCC's HPL
  $MPICC $CFLAGS $inc -c "$here/xhpl_main.c" -o "$out/obj/xhpl_main.o"
  tests="$tests $out/obj/xhpl_main.o"
fi
$MPICC -o "$out/xhpl" $tests $objs $BLAS_LIBS -lm
echo "$version" > "$out/VERSION"
rm -rf "$work" "$out/obj"
echo "hpl/build.sh: $version -> $out/libhpl-linalg-io.so, $out/xhpl"
