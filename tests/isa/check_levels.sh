#!/usr/bin/env bash
# Reads the dispatched archetype program's machine code (objdump) and checks that no
# function of a level's copy uses an instruction of a higher level:
#   archetype_generic::  no VEX/EVEX instruction, no YMM/ZMM register, no BMI/LZCNT/MOVBE;
#   archetype_avx2::     no ZMM, no opmask, no EVEX-only register or instruction,
#                        no VNNI instruction;
#   archetype_avxvnni::  the same, but VNNI in its VEX form ({vex} vpdpbusd/vpdpwssd).
# Complements the qemu runs of suite isa, which prove it for the code the tests reach;
# this covers every function of ours, reached or not.
#   check_levels.sh PROGRAM
set -u
prog=$1
command -v objdump >/dev/null || { echo "objdump (binutils) not found"; exit 1; }
objdump -d -C --no-show-raw-insn "$prog" | awk '
  /^[0-9a-f]+ <.*>:$/ {
    fn = $0; lvl = ""
    if (fn ~ /^[0-9a-f]+ <[^(]*archetype_generic::/ || fn ~ / archetype_generic::[^(]*\(/) lvl = "generic"
    else if (fn ~ /^[0-9a-f]+ <[^(]*archetype_avx2::/ || fn ~ / archetype_avx2::[^(]*\(/) lvl = "avx2"
    else if (fn ~ /^[0-9a-f]+ <[^(]*archetype_avxvnni::/ || fn ~ / archetype_avxvnni::[^(]*\(/) lvl = "avxvnni"
    if (lvl != "") n[lvl]++
    next
  }
  lvl == "generic" && /\t(v[a-z0-9]+|andn|shlx|shrx|sarx|bzhi|pdep|pext|lzcnt|movbe|kmov[a-z]*)[ \t]|%[yz]mm/ {
    if (!(fn in bad)) { bad[fn] = 1; nb++; print "generic function with a higher instruction: " fn; print "   " $0 }
  }
  # objdump marks the VEX form of an instruction that has both as {vex}: the AVX-VNNI
  # vpdpbusd / vpdpwssd, allowed at the avxvnni level alone
  lvl == "avxvnni" && /\t\{vex\} vpdp(busd|wssd)s?[ \t]/ { next }
  (lvl == "avx2" || lvl == "avxvnni") && /\{vex\}|%zmm|%[xy]mm(1[6-9]|2[0-9]|3[01])|%k[0-7]|\{k[1-7]\}|\t(vpternlog|vpermt2|vpermi2|vpcompress|vpexpand|vpdpbusd|vpdpwssd|vprol|vpror|vpsraq|vpabsq|vpmov(s|us)?(qb|qw|qd|db|dw|wb)[ \t]|vpmovm2|vpmov[bwdq]2m|vrange|vrndscale|vgetexp|vscalef|vfixupimm|vcvtusi|vcvtudq|vcvtuqq|vplzcnt|vpconflict|valign|vgf2p8)/ {
    if (!(fn in bad)) { bad[fn] = 1; nb++; print lvl " function with a higher-level instruction: " fn; print "   " $0 }
  }
  END {
    printf "functions read: generic %d, avx2 %d, avxvnni %d; with a higher instruction: %d\n", n["generic"], n["avx2"], n["avxvnni"], nb
    if (n["generic"] + n["avx2"] + n["avxvnni"] == 0) { print "no function of the generic, avx2 or avxvnni level found: not a dispatched build?"; exit 1 }
    exit nb > 0
  }'
