#include "ir/file_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace laya::ir {

namespace {

using ull = unsigned long long;

Status io_error(const char* what, const std::string& path, int err) {
  return status_error(StatusCode::kIoError, "cannot %s '%s': %s", what, path.c_str(),
                      std::strerror(err));
}

const char* file_kind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  return "not a regular file";
}

}  // namespace

Result<ReadFile> ReadFile::open(const std::string& path) {
  ReadFile f;
  f.path_ = path;
  // O_NONBLOCK: opening a FIFO without a writer (or a terminal line) returns at once; for a
  // regular file the flag changes nothing.
  f.fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (f.fd_ < 0) return io_error("open", path, errno);
  struct stat st;
  if (::fstat(f.fd_, &st) != 0) return io_error("stat", path, errno);
  if (!S_ISREG(st.st_mode))
    return status_error(StatusCode::kIoError, "'%s' is %s, not a regular file", path.c_str(),
                        file_kind(st.st_mode));
  f.size_ = static_cast<uint64_t>(st.st_size);
  return f;
}

ReadFile::ReadFile(ReadFile&& o) noexcept
    : fd_(std::exchange(o.fd_, -1)), size_(o.size_), path_(std::move(o.path_)) {}

ReadFile& ReadFile::operator=(ReadFile&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(o.fd_, -1);
    size_ = o.size_;
    path_ = std::move(o.path_);
  }
  return *this;
}

ReadFile::~ReadFile() {
  if (fd_ >= 0) ::close(fd_);
}

Result<std::vector<uint8_t>> file_read_all(const std::string& path, uint64_t max_bytes) {
  LAYA_ASSIGN_OR_RETURN(ReadFile f, ReadFile::open(path));
  if (f.size() > max_bytes)
    return status_error(StatusCode::kOutOfRange, "'%s' has %llu bytes, more than the %llu allowed",
                        path.c_str(), static_cast<ull>(f.size()), static_cast<ull>(max_bytes));
  std::vector<uint8_t> bytes(static_cast<size_t>(f.size()));
  size_t at = 0;
  while (at < bytes.size()) {
    const ssize_t r = ::read(f.fd(), bytes.data() + at, bytes.size() - at);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return io_error("read", path, errno);
    if (r == 0)
      return status_error(StatusCode::kIoError, "'%s' shrank from %zu to %zu bytes while read",
                          path.c_str(), bytes.size(), at);
    at += static_cast<size_t>(r);
  }
  return bytes;
}

Result<FileWriter> FileWriter::create(const std::string& path) {
  FileWriter w;
  w.path_ = path;
  w.tmp_ = path + ".tmp";
  // A fresh file: whatever a previous run left at the tmp name (a file, a FIFO, a symlink) is
  // removed rather than opened; O_EXCL then refuses anything that reappears there.
  if (::unlink(w.tmp_.c_str()) != 0 && errno != ENOENT) return io_error("remove", w.tmp_, errno);
  w.fd_ = ::open(w.tmp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOCTTY, 0644);
  if (w.fd_ < 0) return io_error("create", w.tmp_, errno);
  return w;
}

FileWriter::FileWriter(FileWriter&& o) noexcept
    : fd_(std::exchange(o.fd_, -1)), path_(std::move(o.path_)), tmp_(std::move(o.tmp_)) {}

FileWriter& FileWriter::operator=(FileWriter&& o) noexcept {
  if (this != &o) {
    discard();
    fd_ = std::exchange(o.fd_, -1);
    path_ = std::move(o.path_);
    tmp_ = std::move(o.tmp_);
  }
  return *this;
}

FileWriter::~FileWriter() {
  discard();
}

void FileWriter::discard() {
  if (fd_ < 0) return;
  ::close(fd_);
  ::unlink(tmp_.c_str());
  fd_ = -1;
}

Status FileWriter::write(const void* data, uint64_t n) {
  if (fd_ < 0)
    return status_error(StatusCode::kFailedPrecondition, "'%s' is already closed", tmp_.c_str());
  const uint8_t* p = static_cast<const uint8_t*>(data);
  while (n > 0) {
    const size_t chunk = n < (uint64_t{1} << 30) ? static_cast<size_t>(n) : size_t{1} << 30;
    const ssize_t w = ::write(fd_, p, chunk);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) return io_error("write", tmp_, errno);
    p += w;
    n -= static_cast<uint64_t>(w);
  }
  return Status::ok();
}

Status FileWriter::commit() {
  if (fd_ < 0)
    return status_error(StatusCode::kFailedPrecondition, "'%s' is already closed", tmp_.c_str());
  Status s;
  if (::fsync(fd_) != 0) s = io_error("sync", tmp_, errno);
  if (::close(std::exchange(fd_, -1)) != 0 && s.is_ok()) s = io_error("close", tmp_, errno);
  if (s.is_ok() && ::rename(tmp_.c_str(), path_.c_str()) != 0)
    s = status_error(StatusCode::kIoError, "cannot rename '%s' to '%s': %s", tmp_.c_str(),
                     path_.c_str(), std::strerror(errno));
  if (!s.is_ok()) ::unlink(tmp_.c_str());
  return s;
}

}  // namespace laya::ir
