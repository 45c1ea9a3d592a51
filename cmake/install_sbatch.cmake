# Installs jobs/rmdiag.sbatch with the install's bin folder written in. Slurm runs a copy of a batch
# script from its spool folder, so the script cannot find its binary from its own path; the written
# folder also serves copies users make of the installed script. Variables (set by install(CODE)):
# RMDIAG_SBATCH_SRC (the script), RMDIAG_SBATCH_BINDIR and RMDIAG_SBATCH_DEST (relative to the prefix
# or absolute).
foreach(v RMDIAG_SBATCH_BINDIR RMDIAG_SBATCH_DEST)
  if(IS_ABSOLUTE "${${v}}")
    set(${v}_ABS "${${v}}")
  else()
    set(${v}_ABS "${CMAKE_INSTALL_PREFIX}/${${v}}")
  endif()
endforeach()
file(READ "${RMDIAG_SBATCH_SRC}" text)
string(REPLACE "RMDIAG_INSTALL_BIN=\"\"" "RMDIAG_INSTALL_BIN=\"${RMDIAG_SBATCH_BINDIR_ABS}\"" text "${text}")
set(dest "$ENV{DESTDIR}${RMDIAG_SBATCH_DEST_ABS}/rmdiag.sbatch")
message(STATUS "Installing: ${dest} (with RMDIAG_INSTALL_BIN=${RMDIAG_SBATCH_BINDIR_ABS})")
file(WRITE "${dest}" "${text}")
file(CHMOD "${dest}" PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE WORLD_READ
     WORLD_EXECUTE)
