// The `.laya` model file: writer and memory-mapped loader.
//
// ---- Layout (format 1.x) -----------------------------------------------------------------------
//
//   offset 0   u32 fb_size            little endian; the FlatBuffers size prefix
//   offset 4   u32 root offset        } a size-prefixed FlatBuffer of `fb_size` bytes with file
//   offset 8   "LAYA"                 } identifier "LAYA" and root table laya.fb.Model
//   ...        Model { format_major, format_minor, weights_offset, weights_size, symbols, values,
//                      nodes, inputs, outputs, metadata, states }  (schema: ir/schema/laya.fbs)
//   4+fb_size  zero padding up to `weights_offset`
//   weights_offset (absolute, a multiple of 64): the weight section, `weights_size` bytes. Every
//              weight tensor, the embedded tokenizer and every precompiled backend executable is
//              an Extent {offset, size} in it, offset relative to the section and a multiple of 64,
//              so with the file mapped at a page boundary every byte range is 64-byte aligned. The
//              file ends where the section ends (bytes after it are ignored by the loader).
//
// The identifier sits at a fixed place (bytes 8..11) so any other file (GGUF, JSON, ...) is
// reported as "not a .laya file" before anything else is read. The two version fields are the
// first fields of the root table in every major version, so a newer major whose tables no longer
// verify is still reported as kFileUnsupportedVersion rather than as corrupt.
//
// What is stored: everything in ir::Graph (symbols with bounds; values with name, dtype, symbolic
// shape as constant + per-symbol coefficients, quantization, kind, input role, weight bytes; nodes
// with op, name, inputs, outputs and every attribute of ir/attrs.inc plus `sizes`; graph inputs,
// outputs and states; all of ir::Metadata). Value::producer is not stored: the loader derives it
// from the node outputs.
//
// ---- Loader checks, in order, and the code each failure returns --------------------------------
//
//  model_load only:
//   path cannot be opened, or is not a regular file (a directory, FIFO,
//   device...: refused at once, never waited on; ir/file_io.h)            kIoError (names the path)
//   file size 0                                                            kFileEmpty
//  model_parse:
//   size 0                                                                 kFileEmpty
//   data is null or not 64-byte aligned                                    kInvalidArgument
//   fewer than 12 bytes (size prefix, root offset, identifier)             kFileTruncated
//   bytes 8..11 are not "LAYA"                                             kFileBadIdentifier
//   4 + fb_size > file size                                                kFileTruncated
//   fb_size too small or above the FlatBuffers 2 GiB limit                 kFileCorrupt
//   root table header or its version fields do not verify                  kFileCorrupt
//   format_major != 1 (any minor of major 1 is accepted)                   kFileUnsupportedVersion
//   the FlatBuffers verifier rejects the buffer                            kFileCorrupt
//   weights_offset not a multiple of 64                                    kFileMisaligned
//   weight section overlaps the FlatBuffer or its end overflows            kFileOffsetOutOfBounds
//   weight section ends past the end of the file                           kFileTruncated
//   more than kMaxSymbols symbols                                          kGraphInvalid
//   per value: dtype / kind / role / quant kind not a known enum value     kFileCorrupt
//              rank > kMaxRank, or a term names a missing symbol           kGraphShapeMismatch
//              a term names a missing dimension, or repeats one, or a
//              vector of 64-bit elements is misaligned                     kFileCorrupt
//              a dimension's bound overflows int64 over the symbol bounds  kFileSizeOverflow
//   per weight: shape not fixed, a negative dim, or not whole blocks       kGraphShapeMismatch
//              dims x dtype overflows                                      kFileSizeOverflow
//              no data extent                                              kFileCorrupt
//              stored size != bytes of shape x dtype                       kFileSizeMismatch
//              offset + size outside the weight section                    kFileOffsetOutOfBounds
//              offset % 64 != 0                                            kFileMisaligned
//   a non-weight value with a data extent                                  kFileCorrupt
//   per node: op not in ir/ops.inc                                         kGraphUnknownOp
//              input id >= value count (0xffffffff = kNoValue, an absent
//              optional input, is checked by graph_verify)                 kGraphUndefinedValue
//              output id >= value count, output not an activation, or an
//              activation written by two nodes                             kGraphInvalid
//              misaligned `sizes` vector                                   kFileCorrupt
//   tokenizer / executable extents: same two checks as weights             kFileOffsetOutOfBounds
//                                                                          / kFileMisaligned
//   an executable without a data extent                                    kFileCorrupt
//   (graph input / output / state ids are checked by graph_verify: id range, kind, uniqueness)
//   then ir::graph_verify (see ir/graph.h): e.g. a node reading a value defined only later
//   (kGraphUndefinedValue), a cycle (kGraphCycle), a stored dtype that is not what the node
//   computes (kGraphDtypeMismatch), quantization that does not fit the dtype
//   (kGraphQuantMismatch), inconsistent shapes (kGraphShapeMismatch), bad attributes
//   (kGraphBadAttribute), bad inputs / outputs / states lists, a state read by anything but
//   kv_write, or bad symbols (kGraphInvalid).
//  Every count and id read from the file is checked before it is used; any input, however
//  damaged, returns a Status (tested with every truncation and thousands of random byte flips
//  under ASan/UBSan). Messages name the value / node / field and the numbers involved.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "ir/graph.h"
#include "ir/status.h"

namespace laya::ir {

inline constexpr uint16_t kModelFormatMajor = 1;
// Minor versions (a loader reads every minor of its major; an older loader rejects what it does
// not know with a graph error):
//   1.0  the first format
//   1.1  attention takes q_pos, k_pos, q_seq, k_seq (inputs 4..7); node inputs may hold kNoValue
//   1.2  K-quant dtypes q4_K, q5_K, q6_K; state values (ValueKind state, Model.states), the
//        kv_write op, input roles seq_ids, cache_cells, cell_positions, cell_seq_ids
//   1.3  ops gather, concat, reshape, masked_fill, segment_mean, act_features; Attrs.value
//   1.4  dtypes q5_0, q5_1 (GGUF's 5-bit blocks)
//   1.5  input role logit_rows (a decoder step's rows whose logits are computed)
inline constexpr uint16_t kModelFormatMinor = 5;
// Alignment of the weight section and of every byte range in it.
inline constexpr uint64_t kModelAlignment = 64;

// Writes `g` to `path` in the current format (kModelFormatMajor.kModelFormatMinor). Runs
// graph_verify first and writes nothing for an invalid graph (returning its error). The bytes go to
// a fresh "<path>.tmp", which is fsync'ed and then renamed over `path` (ir/file_io.h), so `path` is
// either untouched or complete; on any failure the tmp file is removed.
// Weight bytes are streamed from `g` to the file (no second copy in memory); a deferred weight
// (Value::fill) is made through one buffer of at most kWriteChunkBytes, reused for every chunk of
// every such weight, so writing needs no more memory than that whatever the weights' sizes. A fill
// failure is returned as is, prefixed with the weight's name. I/O failures return kIoError naming
// the file and the OS error.
inline constexpr uint64_t kWriteChunkBytes = uint64_t{8} << 20;

struct WriteOptions {
  // Called after each weight-section piece is written (nullable): bytes written so far and the
  // total, both of the whole file.
  void (*progress)(void* user, uint64_t done, uint64_t total) = nullptr;
  void* user = nullptr;
};
Status model_write(const Graph& g, const std::string& path, const WriteOptions& opts = {});

// Opens `path`, maps it read-only (MAP_PRIVATE, madvise WILLNEED) and parses it with model_parse.
// The returned graph's weights and blobs point into the mapping, which the graph keeps alive
// (Graph::keepalive) until the graph and all its copies are gone. The file may be deleted or
// renamed meanwhile (model_write replaces files by rename, which is safe), but must not be
// truncated or rewritten in place while mapped (reads of a vanished page raise SIGBUS, as with any
// mapping). Error messages start with the path.
struct LoadOptions {
  // Run the FlatBuffers verifier over the whole model table. false: a trusted image (e.g. a
  // signed flash partition) opens faster; the identifier, version, section, count, offset and
  // graph checks of the list above still run, but a damaged table may then be read out of bounds.
  bool verify_tables = true;
};
Result<Graph> model_load(const std::string& path, const LoadOptions& opts = {});

// Parses and checks a .laya image of `size` bytes at `data` (see the list above). `data` must be
// 64-byte aligned. On success Value::data and the metadata blobs point into [data, data + size)
// (never copied) and `owner`, which must keep those bytes alive and unchanged, is stored in
// Graph::keepalive; it may be null if the caller guarantees the lifetime itself.
Result<Graph> model_parse(const uint8_t* data, uint64_t size, std::shared_ptr<const void> owner,
                          const LoadOptions& opts = {});

}  // namespace laya::ir
