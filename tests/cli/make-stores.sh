#!/bin/sh
# Builds a home folder holding a Hugging Face hub cache, an Ollama store and an LM Studio folder
# from the shared fixtures, laid out as each tool writes them (see core/include/headroom/core/stores/localstores.h).
# Usage: make-stores.sh FIXTURES_DIR HOME_DIR
set -eu
fx=$1
home=$2
rm -rf "$home"
rev=8cca527612d856d7d32bd94f8103728d614eb852   # meta-llama/Llama-2-7b-hf (fixtures/SOURCES.md)
repo=$home/.cache/huggingface/hub/models--meta-llama--Llama-2-7b-hf
mkdir -p "$repo/blobs" "$repo/refs" "$repo/snapshots/$rev"
cp "$fx/hf/Llama-2-7b-hf/config.json" "$repo/blobs/1111111111111111111111111111111111111111"
cp "$fx/hf/Llama-2-7b-hf/model.safetensors.index.json" "$repo/blobs/2222222222222222222222222222222222222222"
printf %s "$rev" > "$repo/refs/main"
ln -s ../../blobs/1111111111111111111111111111111111111111 "$repo/snapshots/$rev/config.json"
ln -s ../../blobs/2222222222222222222222222222222222222222 "$repo/snapshots/$rev/model.safetensors.index.json"

ollama=$home/.ollama/models
a=aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa
mkdir -p "$ollama/blobs" "$ollama/manifests/registry.ollama.ai/library/stories"
cp "$fx/gguf/stories260K.gguf" "$ollama/blobs/sha256-$a"
printf '{"schemaVersion":2,"mediaType":"application/vnd.docker.distribution.manifest.v2+json","layers":[{"mediaType":"application/vnd.ollama.image.model","digest":"sha256:%s","size":1185376}]}' "$a" \
  > "$ollama/manifests/registry.ollama.ai/library/stories/260k"

lms=$home/.lmstudio/models/ggml-org/stories260K-GGUF
mkdir -p "$lms"
cp "$fx/gguf/stories260K.gguf" "$lms/stories260K.gguf"
