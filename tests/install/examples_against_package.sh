#!/bin/sh
# Install.ExamplesBuildAgainstPackage: Weir as a user meets it. Installs the build into an empty
# prefix, builds examples/ there as a project of its own (find_package(Weir), -Wall -Wextra
# -Werror) and runs page_revenue, running_sum, session_late and join_rekey; then compiles
# page_revenue.cc again with nothing but `pkg-config --cflags --libs weir` and runs that. Nothing
# of the engine is rebuilt.
#
#   examples_against_package.sh CMAKE BUILD_DIR SOURCE_DIR GENERATOR CXX [LAUNCHER]
set -eu
cmake=$1 build=$2 source=$3 generator=$4 cxx=$5 launcher=${6:-}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix

"$cmake" --install "$build" --prefix "$prefix" >/dev/null
headers=$(ls "$prefix/include")
if [ "$headers" != weir ]; then
  echo "the package installs headers other than include/weir/: $headers"
  exit 1
fi

# page_revenue's one line: 200000 events in, and as many results out as the run made.
check_run() {
  out=$("$1" "$2")
  echo "$out"
  echo "$out" | grep -Eq '^page_revenue: 200000 events in, [1-9][0-9]* results out' || {
    echo "$1: not the expected summary"
    exit 1
  }
}

"$cmake" -S "$source/examples" -B "$work/examples" -G "$generator" \
  -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_CXX_COMPILER="$cxx" \
  ${launcher:+-DCMAKE_CXX_COMPILER_LAUNCHER="$launcher"} \
  -DCMAKE_BUILD_TYPE=Release "-DCMAKE_CXX_FLAGS=-Wall -Wextra -Werror" >/dev/null
"$cmake" --build "$work/examples"
check_run "$work/examples/page_revenue" "$work/data-cmake"
# The programs of issue 15, as built against the package: each checks its results, and runs
# twice (the second run resumes and adds nothing).
sh "$source/examples/running_sum_test.sh" "$work/examples/running_sum" "$work/running-sum"
for program in session_late join_rekey; do
  sh "$source/examples/run_twice_test.sh" "$work/examples/$program" "$work/$program"
done

libdir=$(dirname "$(find "$prefix" -name weir.pc)")
flags=$(PKG_CONFIG_PATH=$libdir pkg-config --cflags --libs weir)
echo "pkg-config --cflags --libs weir: $flags"
# shellcheck disable=SC2086 # the flags are words
$launcher "$cxx" -std=c++20 -Wall -Wextra -Werror "$source/examples/page_revenue.cc" $flags \
  -o "$work/page_revenue"
check_run "$work/page_revenue" "$work/data-pkg-config"
