# jobwire_library(NAME <name> SRCS ... DEPS ...)
#   A static library jobwire_<name> with the alias jobwire::<name>. Headers are
#   included from the repository root ("broker/store/redis_client.h") in the
#   build tree only; the installed ones get <prefix>/include instead
#   (cmake/JobwirePackage.cmake).
function(jobwire_library)
  cmake_parse_arguments(ARG "" "NAME" "SRCS;DEPS" ${ARGN})
  add_library(jobwire_${ARG_NAME} STATIC ${ARG_SRCS})
  add_library(jobwire::${ARG_NAME} ALIAS jobwire_${ARG_NAME})
  target_include_directories(jobwire_${ARG_NAME} PUBLIC $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}>
                                                        $<BUILD_INTERFACE:${PROJECT_BINARY_DIR}>)
  target_link_libraries(jobwire_${ARG_NAME} PUBLIC ${ARG_DEPS})
endfunction()

# jobwire_test(NAME <name> SRCS ... DEPS ...)
#   A GoogleTest binary registered with ctest, one ctest entry per test case.
function(jobwire_test)
  cmake_parse_arguments(ARG "" "NAME" "SRCS;DEPS" ${ARGN})
  if(NOT JOBWIRE_BUILD_TESTS)
    return()
  endif()
  add_executable(${ARG_NAME} ${ARG_SRCS})
  target_link_libraries(${ARG_NAME} PRIVATE ${ARG_DEPS} GTest::gtest GTest::gmock GTest::gtest_main)
  gtest_discover_tests(${ARG_NAME} DISCOVERY_TIMEOUT 30 PROPERTIES TIMEOUT 300)
endfunction()
