#!/usr/bin/env bash
# Makes archs.o: an ELF object whose .nv_fatbin section holds one tiny kernel as cubins for sm_80, sm_90a, sm_100f and
# sm_120 and as PTX for sm_80 and sm_90a, every entry compressed. Needs NVIDIA's ptxas and fatbinary (the
# nvidia-cuda-nvcc wheel, 13.5.37 made the committed file), gcc and objcopy:
#   pip download --no-deps nvidia-cuda-nvcc==13.5.37 && unzip nvidia_cuda_nvcc-*.whl && BIN=nvidia/cu13/bin ./make.sh
# `cuobjdump -all --list-elf --list-ptx archs.o` (nvidia-cuda-cuobjdump 13.5.37) lists sm_80, sm_90a, sm_100 (the
# family-specific sm_100f is listed without its suffix) and sm_120 cubins, and sm_90a and sm_80 PTX.
set -euo pipefail
BIN=${BIN:?the folder of ptxas and fatbinary}
work=$(mktemp -d)
images=()
for target in sm_80 sm_90a sm_100f sm_120; do
    printf '.version 9.0\n.target %s\n.address_size 64\n.visible .entry k()\n{\n ret;\n}\n' "$target" > "$work/$target.ptx"
    "$BIN/ptxas" -arch="$target" "$work/$target.ptx" -o "$work/$target.cubin"
    images+=("--image3=kind=elf,sm=${target#sm_},file=$work/$target.cubin")
done
images+=("--image3=kind=ptx,sm=90a,file=$work/sm_90a.ptx" "--image3=kind=ptx,sm=80,file=$work/sm_80.ptx")
"$BIN/fatbinary" -64 --compress-all --create="$work/archs.fatbin" "${images[@]}"
echo 'int x;' > "$work/e.c"
gcc -c "$work/e.c" -o "$work/e.o"
objcopy --add-section .nv_fatbin="$work/archs.fatbin" "$work/e.o" "$(dirname "$0")/archs.o"
rm -rf "$work"
