// runtime/text/chat_template: SmolLM2's (from its GGUF), Qwen2.5-Instruct's and Llama-3's templates
// render 12 conversations exactly as transformers does (tests/fixtures/decoder/chat_templates.json,
// tools/reference/make_decoder_fixtures.py), and SmolLM2's renders tokenize to llama.cpp's ids;
// unknown templates are refused by name.
#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "frontends/gguf.h"
#include "runtime/text/chat_template.h"
#include "runtime/text/tokenizer/llama_vocab.h"
#include "runtime/text/tokenizer/tokenizer.h"
#include "tests/runtime/fixture_util.h"
#include "tests/test_files.h"

namespace laya {
namespace {

// SmolLM2's GGUF tokenizer keys (tests/fixtures/tokenizers/smollm2.vocab.json.gz, decompressed by
// meson into LAYA_SMOLLM2_VOCAB) as the tokenizer library reads them.
std::unique_ptr<tok::Tokenizer> smollm2_tokenizer() {
  const char* path = std::getenv("LAYA_SMOLLM2_VOCAB");
  REQUIRE_MESSAGE(path != nullptr, "LAYA_SMOLLM2_VOCAB is not set (run through meson test)");
  std::ifstream f(path, std::ios::binary);
  REQUIRE_MESSAGE(f.good(), "cannot open " << path);
  std::stringstream ss;
  ss << f.rdbuf();
  Result<json::Value> doc = json::parse(ss.str());
  REQUIRE(doc.is_ok());
  const json::Value& d = *doc;
  tok::LlamaVocab v;
  v.model = d.find("model")->as_string();
  v.pre = d.find("pre")->as_string();
  for (const json::Value& t : d.find("tokens")->items()) v.tokens.push_back(t.as_string());
  for (const json::Value& x : d.find("token_types")->items())
    v.token_types.push_back(static_cast<int32_t>(*x.as_int64()));
  for (const json::Value& m : d.find("merges")->items()) v.merges.push_back(m.as_string());
  auto id = [&](const char* k) { return static_cast<int32_t>(*d.find(k)->as_int64()); };
  v.bos_id = id("bos_id");
  v.eos_id = id("eos_id");
  v.unk_id = id("unk_id");
  v.pad_id = id("pad_id");
  v.add_bos = static_cast<int8_t>(id("add_bos"));
  v.add_space_prefix = static_cast<int8_t>(id("add_space_prefix"));
  Result<tok::TokenizerSpec> spec = tok::spec_from_llama_vocab(v);
  REQUIRE_MESSAGE(spec.is_ok(), spec.status().to_string());
  Result<std::unique_ptr<tok::Tokenizer>> t = tok::Tokenizer::create(std::move(spec).value());
  REQUIRE_MESSAGE(t.is_ok(), t.status().to_string());
  return std::move(t).value();
}

ChatTemplate recognize(std::string_view jinja, std::string_view bos) {
  Result<ChatTemplate> t = ChatTemplate::recognize(jinja, bos);
  REQUIRE_MESSAGE(t.is_ok(), t.status().to_string());
  return std::move(t).value();
}

TEST_CASE(
    "SmolLM2, Qwen2.5 and Llama-3 templates render as transformers; SmolLM2 ids as llama.cpp") {
  const json::Value fx = test::fixture_json("decoder/chat_templates.json");
  std::vector<std::vector<ChatMessage>> conversations;
  for (const json::Value& c : fx.find("conversations")->items()) {
    std::vector<ChatMessage> conv;
    for (const json::Value& m : c.items())
      conv.push_back({m.find("role")->as_string(), m.find("content")->as_string()});
    conversations.push_back(std::move(conv));
  }
  REQUIRE(conversations.size() >= 10);
  const json::Value& templates = *fx.find("templates");
  const ChatTemplate smol = recognize(templates.find("smollm2")->find("template")->as_string(),
                                      templates.find("smollm2")->find("bos")->as_string());
  const ChatTemplate qwen = recognize(templates.find("qwen2.5")->find("template")->as_string(),
                                      templates.find("qwen2.5")->find("bos")->as_string());
  const ChatTemplate llama = recognize(templates.find("llama3")->find("template")->as_string(),
                                       templates.find("llama3")->find("bos")->as_string());
  CHECK(smol.format() == ChatFormat::kChatMl);
  CHECK(smol.default_system() ==
        "You are a helpful AI assistant named SmolLM, trained by Hugging Face");
  CHECK_FALSE(smol.renders_bos());
  CHECK(qwen.format() == ChatFormat::kChatMl);
  CHECK(qwen.default_system() ==
        "You are Qwen, created by Alibaba Cloud. You are a helpful assistant.");
  CHECK(llama.format() == ChatFormat::kLlama3);
  CHECK(llama.renders_bos());

  const std::unique_ptr<tok::Tokenizer> tk = smollm2_tokenizer();
  const bool add_bos = fx.find("smollm2_add_bos")->as_bool();
  int texts = 0, id_lists = 0;
  for (const json::Value& c : fx.find("cases")->items()) {
    const std::string& name = c.find("template")->as_string();
    const size_t conv = static_cast<size_t>(*c.find("conversation")->as_int64());
    const bool gen = c.find("add_generation_prompt")->as_bool();
    CAPTURE(name);
    CAPTURE(conv);
    CAPTURE(gen);
    const ChatTemplate& t = name == "smollm2" ? smol : name == "qwen2.5" ? qwen : llama;
    Result<std::string> text = t.render(conversations.at(conv), gen);
    REQUIRE(text.is_ok());
    CHECK(*text == c.find("text")->as_string());
    ++texts;
    if (const json::Value* ids = c.find("ids")) {
      std::vector<int32_t> want;
      for (const json::Value& x : ids->items()) want.push_back(static_cast<int32_t>(*x.as_int64()));
      tok::EncodeOptions opts;
      opts.add_special_tokens = add_bos && !t.renders_bos();
      std::vector<int32_t> got;
      REQUIRE(tk->encode(*text, opts, &got).is_ok());
      CHECK(got == want);
      ++id_lists;
    }
  }
  CHECK(texts == 72);
  CHECK(id_lists == 24);
}

TEST_CASE("the real SmolLM2 GGUF: its tokenizer.chat_template through frontends/gguf.h") {
  const std::string path = test::smollm2_or_skip();
  if (path.empty()) return;
  Result<frontends::gguf::File> file = frontends::gguf::File::open(path);
  REQUIRE_MESSAGE(file.is_ok(), file.status().to_string());
  Result<frontends::gguf::TokenizerData> td = frontends::gguf::tokenizer_data(*file);
  REQUIRE_MESSAGE(td.is_ok(), td.status().to_string());
  REQUIRE(td->bos_id >= 0);
  const ChatTemplate t = recognize(td->chat_template, td->tokens[static_cast<size_t>(td->bos_id)]);
  const json::Value fx = test::fixture_json("decoder/chat_templates.json");
  CHECK(td->chat_template == fx.find("templates")->find("smollm2")->find("template")->as_string());
  CHECK(t.format() == ChatFormat::kChatMl);
  const std::vector<ChatMessage> m = {{"user", "Hello!"}};
  Result<std::string> text = t.render(m, true);
  REQUIRE(text.is_ok());
  CHECK(*text ==
        "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging "
        "Face<|im_end|>\n<|im_start|>user\nHello!<|im_end|>\n<|im_start|>assistant\n");
}

TEST_CASE("Llama-3 trims content as Python's str.strip") {
  const ChatTemplate t = recognize(
      "{{ '<|start_header_id|>' + message['role'] + '<|end_header_id|>' + '<|eot_id|>' }}",
      "<|begin_of_text|>");
  // U+3000 and U+0085 are whitespace to Python, U+200B (zero width space) is not; a lone
  // continuation byte never is.
  const std::vector<ChatMessage> m = {{"user", "\xE3\x80\x80\xC2\x85 a b\x1F\n"},
                                      {"user", "\xE2\x80\x8B x \xE2\x80\x8B"},
                                      {"user", "\x80 "}};
  Result<std::string> r = t.render(m, false);
  REQUIRE(r.is_ok());
  CHECK(*r ==
        "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\na b<|eot_id|>"
        "<|start_header_id|>user<|end_header_id|>\n\n\xE2\x80\x8B x \xE2\x80\x8B<|eot_id|>"
        "<|start_header_id|>user<|end_header_id|>\n\n\x80<|eot_id|>");
}

TEST_CASE("templates that are not ChatML or Llama-3 are refused by name") {
  const std::string llama2 =
      "{% for message in messages %}{% if message['role'] == 'user' %}{{ bos_token + '[INST] ' + "
      "message['content'] + ' [/INST]' }}{% endif %}{% endfor %}";
  Result<ChatTemplate> r = ChatTemplate::recognize(llama2, "<s>");
  REQUIRE_FALSE(r.is_ok());
  CHECK(r.status().code() == StatusCode::kUnsupported);
  CHECK(std::string(r.status().message()).find("unknown chat template") != std::string::npos);
  CHECK(std::string(r.status().message()).find("{% for message in messages %}") !=
        std::string::npos);

  r = ChatTemplate::recognize("", "<s>");
  REQUIRE_FALSE(r.is_ok());
  CHECK(r.status().code() == StatusCode::kNotFound);
  CHECK(std::string(r.status().message()).find("raw prompt") != std::string::npos);

  r = ChatTemplate::recognize(
      "{{- '<|start_header_id|>system<|end_header_id|>\\n\\n' }}{{- 'Cutting Knowledge Date: "
      "December 2023\\n' }}{{ '<|eot_id|>' }}",
      "<|begin_of_text|>");
  REQUIRE_FALSE(r.is_ok());
  CHECK(r.status().code() == StatusCode::kUnsupported);
  CHECK(std::string(r.status().message()).find("Llama 3.1") != std::string::npos);

  const ChatTemplate t = recognize("{{'<|im_start|>' + message['role'] + '<|im_end|>'}}", "");
  CHECK(t.default_system().empty());
  CHECK_FALSE(t.render({}, true).is_ok());
}

}  // namespace
}  // namespace laya
