# Install layout (FHS / Debian). Included from the root CMakeLists.txt.
# Owned by the packaging work: see debian/ and packaging/.
