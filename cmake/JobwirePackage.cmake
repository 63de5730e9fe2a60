# install(): the C++ client as a CMake package, for consumers that write
#
#   find_package(jobwire 0.1 REQUIRED)
#   target_link_libraries(my_target PRIVATE jobwire::client)
#
# Installed tree (<prefix> = CMAKE_INSTALL_PREFIX):
#   include/jobwire/{client,worker,job,error_details}.h  client/cpp's public headers
#   include/jobwire/v1/*.pb.h, *.grpc.pb.h   generated from proto/jobwire/v1
#   lib/libjobwire_client.a, libjobwire_proto.a
#   lib/cmake/jobwire/jobwireConfig.cmake    finds the dependencies, then
#     jobwireTargets.cmake                   jobwire::client, jobwire::proto
#     jobwireConfigVersion.cmake             0.1 accepts 0.1.z (SameMinorVersion)
# (lib is CMAKE_INSTALL_LIBDIR, include CMAKE_INSTALL_INCLUDEDIR.) The broker
# and CLI are not installed here. client/cpp/package_test.sh checks the
# package from a client-only build (JOBWIRE_CLIENT_ONLY). Not included in TSan
# builds (see the root CMakeLists.txt).
include(CMakePackageConfigHelpers)

set(JOBWIRE_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/jobwire)

# The headers are each target's PUBLIC_HEADER (client/cpp/, proto/).
install(TARGETS jobwire_client EXPORT jobwireTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  PUBLIC_HEADER DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/jobwire
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS jobwire_proto EXPORT jobwireTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  PUBLIC_HEADER DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/jobwire/v1
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT jobwireTargets NAMESPACE jobwire:: DESTINATION ${JOBWIRE_CMAKE_DIR})

configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/jobwireConfig.cmake.in
  ${PROJECT_BINARY_DIR}/jobwireConfig.cmake
  INSTALL_DESTINATION ${JOBWIRE_CMAKE_DIR})
# 0.x: a minor version may break the API, so 0.1 accepts 0.1.z only.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/jobwireConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/jobwireConfig.cmake
              ${PROJECT_BINARY_DIR}/jobwireConfigVersion.cmake
        DESTINATION ${JOBWIRE_CMAKE_DIR})
