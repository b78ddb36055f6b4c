# The plugin authors' test kit: weft/test.h and libweft-test, built from the
# same sources as the harness of weft's own integration tests
# (tests/support/harness.c + kit.c), with the installed weft as its default
# server ($WEFT_TEST_BIN overrides it). Shipped in weft-dev; pkg-config
# weft-test. Included from the root CMakeLists.txt.
if(NOT WEFT_TEST_KIT)
  return()
endif()

pkg_check_modules(CRITERION REQUIRED IMPORTED_TARGET criterion)
pkg_check_modules(CURL REQUIRED IMPORTED_TARGET libcurl)

if(IS_ABSOLUTE "${WEFT_PLUGIN_INSTALL_DIR}")
  set(WEFT_KIT_PLUGIN_DIR "${WEFT_PLUGIN_INSTALL_DIR}")
else()
  set(WEFT_KIT_PLUGIN_DIR "${CMAKE_INSTALL_PREFIX}/${WEFT_PLUGIN_INSTALL_DIR}")
endif()
# server/dev/pgcluster.c is `weft dev`'s own private-database helper (libc only): the
# kit's optional database is started by the same code, with the same pgdev script.
add_library(weft-test STATIC tests/support/harness.c tests/support/spawn.c tests/support/kit.c
  server/dev/pgcluster.c)
set_target_properties(weft-test PROPERTIES ARCHIVE_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/testkit)
target_include_directories(weft-test PUBLIC ${PROJECT_SOURCE_DIR}/server/include
  PRIVATE ${PROJECT_SOURCE_DIR}/tests/support ${PROJECT_SOURCE_DIR}/server)
target_compile_definitions(weft-test PRIVATE
  WEFT_BIN="${CMAKE_INSTALL_FULL_SBINDIR}/weft"
  WEFT_PGDEV_SCRIPT="${WEFT_PGDEV_SCRIPT}"
  WEFT_PLUGIN_DIR="${WEFT_KIT_PLUGIN_DIR}"
  WEFT_FIXTURE_DIR="${WEFT_KIT_PLUGIN_DIR}")
target_link_libraries(weft-test PUBLIC PkgConfig::CRITERION PkgConfig::CURL)
install(TARGETS weft-test ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(FILES ${PROJECT_SOURCE_DIR}/server/include/weft/test.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/weft)

# It links a library, so its .pc is architecture-dependent: libdir/pkgconfig.
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  set(WEFT_PC_LIBDIR "${CMAKE_INSTALL_LIBDIR}")
else()
  set(WEFT_PC_LIBDIR "\${prefix}/${CMAKE_INSTALL_LIBDIR}")
endif()
configure_file(${PROJECT_SOURCE_DIR}/packaging/weft-test.pc.in ${PROJECT_BINARY_DIR}/weft-test.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/weft-test.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
