# Install layout (FHS / Debian). Included from the root CMakeLists.txt.
# Owned by the packaging work: see debian/ and packaging/.
#
# The server binary, the public header and the bundled plugins are installed
# by server/CMakeLists.txt and weft_add_plugin(); this file adds everything
# else an installed weft needs: the database schema and its setup helper, the
# man pages, and the plugin SDK's pkg-config file and example.

# weft-plugin.pc describes headers only (a plugin links nothing from weft),
# so it does not depend on the architecture: share/pkgconfig, which
# pkg-config searches on every architecture, is its natural home.
set(WEFT_PKGCONFIG_INSTALL_DIR "${CMAKE_INSTALL_DATADIR}/pkgconfig" CACHE STRING
  "Where weft-plugin.pc is installed")
# Debian puts examples under the documentation of the package that ships
# them (share/doc/weft-dev/examples); debian/rules overrides this.
set(WEFT_EXAMPLES_INSTALL_DIR "${CMAKE_INSTALL_DOCDIR}/examples" CACHE STRING
  "Where the example plugin sources are installed")

# The .pc file stays relocatable: ${prefix}-relative unless the include
# directory was given as an absolute path.
if(IS_ABSOLUTE "${CMAKE_INSTALL_INCLUDEDIR}")
  set(WEFT_PC_INCLUDEDIR "${CMAKE_INSTALL_INCLUDEDIR}")
else()
  set(WEFT_PC_INCLUDEDIR "\${prefix}/${CMAKE_INSTALL_INCLUDEDIR}")
endif()
file(STRINGS ${PROJECT_SOURCE_DIR}/server/include/weft/plugin.h WEFT_PC_ABI_LINE
  REGEX "^#define WEFT_PLUGIN_ABI [0-9]+u?$")
string(REGEX REPLACE "^#define WEFT_PLUGIN_ABI ([0-9]+)u?$" "\\1" WEFT_PC_ABI "${WEFT_PC_ABI_LINE}")
if(NOT WEFT_PC_ABI MATCHES "^[0-9]+$")
  message(FATAL_ERROR "cannot read WEFT_PLUGIN_ABI from server/include/weft/plugin.h")
endif()
configure_file(${PROJECT_SOURCE_DIR}/packaging/weft-plugin.pc.in ${PROJECT_BINARY_DIR}/weft-plugin.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/weft-plugin.pc DESTINATION ${WEFT_PKGCONFIG_INSTALL_DIR})

# The template plugin, as the starting point of out-of-tree plugins.
install(FILES ${PROJECT_SOURCE_DIR}/plugins/hello/hello.c DESTINATION ${WEFT_EXAMPLES_INSTALL_DIR}/hello)

# Schema migrations, applied in lexical order by weft-setup-db.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/sql/ DESTINATION ${CMAKE_INSTALL_DATADIR}/weft/sql
  FILES_MATCHING PATTERN "*.sql")
install(PROGRAMS ${PROJECT_SOURCE_DIR}/packaging/weft-setup-db DESTINATION ${CMAKE_INSTALL_SBINDIR})
# `weft dev`'s private PostgreSQL (configure with WEFT_PGDEV_SCRIPT pointing
# here): one level below the schema, which it finds as ../sql.
install(PROGRAMS ${PROJECT_SOURCE_DIR}/packaging/pgdev.sh DESTINATION ${CMAKE_INSTALL_DATADIR}/weft/pgdev)

install(FILES ${PROJECT_SOURCE_DIR}/packaging/weft.8 ${PROJECT_SOURCE_DIR}/packaging/weft-setup-db.8
  DESTINATION ${CMAKE_INSTALL_MANDIR}/man8)
