#!/usr/bin/env bash
# Writes the verbatim excerpts that test/catalogue/published-throughput.test.ts checks src/catalogue/published-throughput.ts
# against, from git mirrors of the cited repositories (git clone --mirror; the commits below are the cited ones).
#   test/catalogue/published/extract.sh <DeepLearningExamples.git> <deeplearning-benchmark.git> <lambda-tensorflow-benchmark.git>
set -euo pipefail
[[ $# -eq 3 ]] || { echo "usage: $0 <NVIDIA/DeepLearningExamples git dir> <lambdal/deeplearning-benchmark git dir> <LambdaColdStorage/lambda-tensorflow-benchmark git dir>" >&2; exit 2; }
dle=$1 lambda=$2 lambdatf=$3
here=$(cd "$(dirname "$0")" && pwd)
DLE=729963dd47e7c8bd462ad10bfac7a7b0b604e6dd
LAMBDA=aa5addb6a53675a649a80036dad548f1c27cbcc4
LAMBDATF=e086e0e7d88a19991642d0774793693d4b7cbe46
show() { git --git-dir="$1" show "$2:$3"; }
# Every training-performance table of the PyTorch ResNet-50 v1.5 README, and the per-GPU batch sizes it ran at.
# (each heading and its table: up to the second blank line after the heading)
show "$dle" $DLE PyTorch/Classification/ConvNets/resnet50v1.5/README.md \
  | awk '/^##### Training performance: NVIDIA DGX/ {on = 1; blanks = 0} on {print} on && /^$/ && ++blanks == 2 {on = 0}' > "$here/dle-pytorch-resnet50v1.5-readme.md"
show "$dle" $DLE PyTorch/Classification/ConvNets/configs.yml | sed -n '/^    resnet50: # {{{/,/^    # }}}/p' > "$here/dle-pytorch-convnets-configs.yml"
for precision in fp32 fp16; do
  for kind in throughput bs; do
    show "$lambda" $LAMBDA pytorch/csv_v1_v2/pytorch-train-$kind-$precision.csv > "$here/lambda-pytorch-train-$kind-$precision.csv"
    show "$lambdatf" $LAMBDATF tf-train-$kind-$precision.csv > "$here/lambda-tf-train-$kind-$precision.csv"
  done
done
# Lambda's newer results (v2 CSVs; no batch-size CSV): the whole table, then the runs behind the 1x H200 row
# (LambdaBM_ENG04, 3 runs a precision), each log's parameters (batch_size, amp, memory_format) and summary lines.
for precision in fp32 fp16; do
  show "$lambda" $LAMBDA pytorch/pytorch-train-throughput-v2-$precision.csv > "$here/lambda-pytorch-train-throughput-v2-$precision.csv"
done
for task in FP32 AMP; do
  git --git-dir="$lambda" ls-tree -r --name-only $LAMBDA "pytorch/results_v2/LambdaBM_ENG04_1xH200_140GB_SXM_h200_v2/PyTorch_resnet50_$task/" | grep '\.txt$' \
    | while read -r file; do echo "# $file"; show "$lambda" $LAMBDA "$file" | grep -E ' - PARAMETER data | - Summary: train\.loss'; done \
    > "$here/lambda-h200-resnet50-${task,,}.txt"
done
# The one A100 run on an AWS p4d in Lambda's logs: each precision's parameters and summary lines.
for task in FP32 AMP; do
  file=$(git --git-dir="$lambda" ls-tree -r --name-only $LAMBDA "pytorch/results/A100_p4/PyTorch_resnet50_$task/" | grep -v monitor | head -1)
  { echo "# $file"; show "$lambda" $LAMBDA "$file" | grep -E ' - PARAMETER data | - Summary: train\.loss' ; } \
    > "$here/lambda-a100-p4-resnet50-${task,,}.txt"
done
