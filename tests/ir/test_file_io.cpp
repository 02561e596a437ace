// Files named by the user (ir/file_io.h): only regular files are read, at once, never waiting on a
// FIFO; atomic writes never open what a previous run left at the tmp name.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <thread>

#include "ir/file_io.h"
#include "ir/model_file.h"
#include "tests/ir/ir_test_util.h"
#include "tests/test_files.h"

using namespace laya;
using namespace laya::ir;
using namespace laya::ir::test;

namespace {

using laya::test::TempDir;

// Runs `f` on its own thread and reports whether it returned within 10 s. If not, `unblock` (which
// must make `f` return) is called and the thread joined, so a regression fails the test instead of
// hanging the suite.
bool returns_promptly(const std::function<void()>& f, const std::function<void()>& unblock) {
  std::atomic<bool> done{false};
  std::thread t([&] {
    f();
    done = true;
  });
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!done && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  const bool prompt = done;
  while (!done) {
    unblock();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  t.join();
  return prompt;
}

// Opens the other end of `fifo` for a moment (non-blocking), releasing a blocked open().
void poke_fifo(const std::string& fifo, int flags) {
  const int fd = ::open(fifo.c_str(), flags | O_NONBLOCK);
  if (fd >= 0) ::close(fd);
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

}  // namespace

TEST_CASE("file_io: a FIFO is refused at once, never waited on") {
  TempDir dir;
  const std::string fifo = dir.file("model.laya");
  REQUIRE(::mkfifo(fifo.c_str(), 0644) == 0);
  auto release_reader = [&] { poke_fifo(fifo, O_WRONLY); };

  Status load, open, read;
  CHECK(returns_promptly([&] { load = model_load(fifo).status(); }, release_reader));
  CHECK_STATUS(load, StatusCode::kIoError, fifo, "a FIFO, not a regular file");
  CHECK(returns_promptly([&] { open = ReadFile::open(fifo).status(); }, release_reader));
  CHECK_STATUS(open, StatusCode::kIoError, fifo, "FIFO");
  CHECK(returns_promptly([&] { read = file_read_all(fifo, 1 << 20).status(); }, release_reader));
  CHECK_STATUS(read, StatusCode::kIoError, fifo, "FIFO");
}

TEST_CASE("file_io: directories and devices are refused; missing files name the OS reason") {
  TempDir dir;
  CHECK_STATUS(ReadFile::open(dir.path).status(), StatusCode::kIoError, dir.path, "a directory");
  CHECK_STATUS(ReadFile::open("/dev/null").status(), StatusCode::kIoError, "/dev/null",
               "a character device");
  CHECK_STATUS(model_load("/dev/zero").status(), StatusCode::kIoError, "character device");
  const std::string missing = dir.file("missing.npy");
  CHECK_STATUS(file_read_all(missing, 100).status(), StatusCode::kIoError, missing,
               "No such file or directory");
}

TEST_CASE("file_io: file_read_all reads everything and enforces its limit before reading") {
  TempDir dir;
  const std::string path = dir.file("data.bin");
  write_text(path, "hello, world");
  Result<std::vector<uint8_t>> all = file_read_all(path, 12);
  REQUIRE(all.is_ok());
  CHECK(std::string(all->begin(), all->end()) == "hello, world");
  CHECK_STATUS(file_read_all(path, 11).status(), StatusCode::kOutOfRange, path, "12 bytes");
  write_text(path, "");
  Result<std::vector<uint8_t>> empty = file_read_all(path, 0);
  REQUIRE(empty.is_ok());
  CHECK(empty->empty());
}

TEST_CASE("file_io: a writer replaces a stale FIFO at its tmp name instead of opening it") {
  TempDir dir;
  const std::string path = dir.file("out.npy");
  const std::string tmp = path + ".tmp";
  REQUIRE(::mkfifo(tmp.c_str(), 0644) == 0);
  void (*old_pipe)(int) = ::signal(SIGPIPE, SIG_IGN);  // a regression would write into the FIFO
  Status st;
  CHECK(returns_promptly(
      [&] {
        Result<FileWriter> w = FileWriter::create(path);
        st = w.is_ok() ? w->write("abc", 3) : w.status();
        if (st.is_ok()) st = w->commit();
      },
      [&] { poke_fifo(tmp, O_RDONLY); }));
  ::signal(SIGPIPE, old_pipe);
  CHECK_OK(st);
  struct stat sb;
  REQUIRE(::stat(path.c_str(), &sb) == 0);
  CHECK(S_ISREG(sb.st_mode));
  CHECK(sb.st_size == 3);
  CHECK_FALSE(std::filesystem::exists(tmp));

  // model_write goes through the same writer.
  const std::string model = dir.file("m.laya");
  REQUIRE(::mkfifo((model + ".tmp").c_str(), 0644) == 0);
  const Graph g = make_tiny_model().g;
  old_pipe = ::signal(SIGPIPE, SIG_IGN);
  CHECK(returns_promptly([&] { st = model_write(g, model); },
                         [&] { poke_fifo(model + ".tmp", O_RDONLY); }));
  ::signal(SIGPIPE, old_pipe);
  CHECK_OK(st);
  CHECK(model_load(model).is_ok());
}

TEST_CASE("file_io: a writer dropped before commit leaves the target as it was") {
  TempDir dir;
  const std::string path = dir.file("keep.txt");
  write_text(path, "old");
  {
    Result<FileWriter> w = FileWriter::create(path);
    REQUIRE(w.is_ok());
    CHECK_OK(w->write("new bytes", 9));
  }
  CHECK_FALSE(std::filesystem::exists(path + ".tmp"));
  Result<std::vector<uint8_t>> bytes = file_read_all(path, 100);
  REQUIRE(bytes.is_ok());
  CHECK(std::string(bytes->begin(), bytes->end()) == "old");
  // Writing after commit is a precondition failure, not a crash.
  Result<FileWriter> w = FileWriter::create(path);
  REQUIRE(w.is_ok());
  CHECK_OK(w->commit());
  CHECK(w->write("x", 1).code() == StatusCode::kFailedPrecondition);
}
