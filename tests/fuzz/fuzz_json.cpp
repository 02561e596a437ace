// Fuzz target: text through runtime/text/json's parser (requests, tokenizer.json, configs). A document
// that parses must survive the trip through dump and parse again unchanged, in both of dump's
// styles (one line with non-ASCII kept; indented with ensure_ascii); anything else gives a Status.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "runtime/text/json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace laya;
  json::ParseOptions opts;
  opts.max_depth = 64;
  Result<json::Value> v =
      json::parse(std::string_view(reinterpret_cast<const char*>(data), size), opts);
  if (!v.is_ok()) return 0;
  json::DumpOptions pretty;
  pretty.ensure_ascii = true;
  pretty.indent = 2;
  for (const json::DumpOptions& style : {json::DumpOptions{}, pretty}) {
    Result<json::Value> again = json::parse(json::dump(*v, style), opts);
    if (!again.is_ok() || !(*again == *v)) std::abort();  // dump wrote what parse cannot read back
  }
  return 0;
}
