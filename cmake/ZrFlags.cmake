# Compiler flags for every target of the project (libraries, tests, fuzzers,
# tools): warnings, ZR_WERROR, ZR_SANITIZER and the ZR_FUZZ instrumentation.
include(CheckCSourceCompiles)

if(NOT CMAKE_C_COMPILER_ID MATCHES "GNU|Clang")
	message(FATAL_ERROR "zring needs gcc or clang (found ${CMAKE_C_COMPILER_ID})")
endif()

add_compile_options(
	-Wall -Wextra -Wshadow -Wformat=2 -Wconversion
	-Wstrict-prototypes -Wmissing-prototypes
	-Wpointer-arith -Wvla -Wundef)
if(CMAKE_C_COMPILER_ID MATCHES "Clang")
	# clang's -Wconversion includes -Wstring-conversion, which rejects the
	# assert(!"why this cannot happen") idiom the house style asks for.
	add_compile_options(-Wno-string-conversion)
endif()
if(ZR_WERROR)
	add_compile_options(-Werror)
endif()

# Tries flags on a trivial program, so a sanitizer the toolchain cannot link
# (say, memory with gcc, or a missing runtime package) fails at configure time
# with a clear message instead of in the middle of the build.
# zr_require_flags(WHAT SOURCE FLAG...)
function(zr_require_flags what source)
	set(CMAKE_REQUIRED_FLAGS "${ARGN}")
	list(JOIN CMAKE_REQUIRED_FLAGS " " CMAKE_REQUIRED_FLAGS)
	set(CMAKE_REQUIRED_LINK_OPTIONS ${ARGN})
	string(MAKE_C_IDENTIFIER "ZR_HAVE_${what}" var)
	check_c_source_compiles("${source}" ${var})
	if(NOT ${var})
		unset(${var} CACHE) # probe again next time, after deps.sh
		message(FATAL_ERROR "${CMAKE_C_COMPILER_ID} ${CMAKE_C_COMPILER_VERSION} cannot build with "
			"${ARGN} (${what}); run scripts/deps.sh, or pick another compiler")
	endif()
endfunction()
set(zr_main_source "int main(void) { return 0; }")
# libFuzzer brings main() and calls this.
set(zr_fuzz_source "#include <stddef.h>
#include <stdint.h>
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { (void)data; (void)size; return 0; }")

if(ZR_SANITIZER)
	list(JOIN ZR_SANITIZER "," zr_san)
	set(zr_san_flags "-fsanitize=${zr_san}" -fno-omit-frame-pointer)
	if("undefined" IN_LIST ZR_SANITIZER)
		# A UB report is a failure, not a line in a log nobody reads.
		list(APPEND zr_san_flags -fno-sanitize-recover=undefined)
	endif()
	if("memory" IN_LIST ZR_SANITIZER)
		list(APPEND zr_san_flags -fsanitize-memory-track-origins)
	endif()
	zr_require_flags("sanitizer_${zr_san}" "${zr_main_source}" ${zr_san_flags})
	add_compile_options(${zr_san_flags})
	add_link_options(${zr_san_flags})
endif()

if(ZR_FUZZ)
	if(NOT CMAKE_C_COMPILER_ID MATCHES "Clang")
		message(FATAL_ERROR "ZR_FUZZ needs clang (libFuzzer): configure with -DCMAKE_C_COMPILER=clang")
	endif()
	# Coverage instrumentation for all code; the harnesses themselves add
	# -fsanitize=fuzzer (which brings libFuzzer's main) in fuzz/CMakeLists.txt.
	zr_require_flags(fuzzer "${zr_fuzz_source}" -fsanitize=fuzzer)
	add_compile_options(-fsanitize=fuzzer-no-link)
	add_link_options(-fsanitize=fuzzer-no-link)
	# Broken invariants abort under the fuzzer even in optimised builds
	# (common/base.h: ZR_INVARIANT).
	add_compile_definitions(FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION)
endif()
