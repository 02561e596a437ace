// Files named by the user: the one place the library and its tools turn a path into bytes, or
// bytes into a file. The model loader, the model writer and laya-run's .npy reader and writer use
// it; a new parser (GGUF, safetensors, tokenizer.json, request JSON) reads its file through it too.
//
// Rules every path gets:
//  - Only regular files are read. A directory, FIFO, socket or device is a kIoError that names the
//    path and what it is, returned at once: files are opened with O_NONBLOCK, so a FIFO without a
//    writer (or a terminal) cannot make an open or a read hang.
//  - Every OS failure is a kIoError naming the path and the OS reason (strerror of errno).
//  - Writes are atomic: the bytes go to a fresh "<path>.tmp" (whatever was at that name is removed
//    first, so a stale FIFO or symlink there is never opened), which is fsync'ed and renamed over
//    `path`. `path` is either untouched or complete; on failure the tmp file is removed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/status.h"

namespace laya::ir {

// An open regular file, read-only. Move-only; closes the descriptor on destruction.
class ReadFile {
 public:
  // kIoError when `path` cannot be opened or stat'ed, or is not a regular file.
  static Result<ReadFile> open(const std::string& path);

  ReadFile(ReadFile&& o) noexcept;
  ReadFile& operator=(ReadFile&& o) noexcept;
  ReadFile(const ReadFile&) = delete;
  ReadFile& operator=(const ReadFile&) = delete;
  ~ReadFile();

  int fd() const { return fd_; }           // owned by this object
  uint64_t size() const { return size_; }  // at open
  const std::string& path() const { return path_; }

 private:
  ReadFile() = default;
  int fd_ = -1;
  uint64_t size_ = 0;
  std::string path_;
};

// The whole of the regular file `path`. kIoError as above; kOutOfRange naming the path when it has
// more than `max_bytes` bytes (checked before anything is read).
Result<std::vector<uint8_t>> file_read_all(const std::string& path, uint64_t max_bytes);

// Writes `path` atomically (see the rules above). Move-only; a writer destroyed before commit()
// removes its tmp file and leaves `path` as it was.
class FileWriter {
 public:
  // Creates "<path>.tmp"; kIoError naming it when that fails.
  static Result<FileWriter> create(const std::string& path);

  FileWriter(FileWriter&& o) noexcept;
  FileWriter& operator=(FileWriter&& o) noexcept;
  FileWriter(const FileWriter&) = delete;
  FileWriter& operator=(const FileWriter&) = delete;
  ~FileWriter();

  // Appends `n` bytes from `data` (borrowed for the call).
  Status write(const void* data, uint64_t n);
  // fsync, close, rename over `path`. The writer is finished afterwards, whatever the result.
  Status commit();

 private:
  FileWriter() = default;
  void discard();
  int fd_ = -1;
  std::string path_, tmp_;
};

}  // namespace laya::ir
