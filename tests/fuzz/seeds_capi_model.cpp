// Seed corpus of fuzz_capi_model: the tiny Laya checkpoint (tests/fixtures/laya-tiny-modernbert)
// converted by the importer as laya-convert does, and the tiny llama GGUF (a decoder).
//   fuzz_seeds_capi_model OUTDIR
#include <cstdio>
#include <fstream>
#include <string>

#include "frontends/import.h"
#include "ir/model_file.h"

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  const std::string out = argv[1];
  const std::string fixtures = LAYA_FIXTURES_DIR;
  laya::Result<laya::ir::Graph> g =
      laya::frontends::import_checkpoint(fixtures + "/laya-tiny-modernbert", {});
  if (!g.is_ok() || !laya::ir::model_write(*g, out + "/tiny.laya").is_ok()) {
    std::fprintf(stderr, "cannot write the tiny Laya seed\n");
    return 1;
  }
  std::ifstream in(fixtures + "/gguf/tiny-llama.gguf", std::ios::binary);
  std::ofstream o(out + "/tiny-llama.gguf", std::ios::binary);
  o << in.rdbuf();
  return o.good() ? 0 : 1;
}
