// The AMX tile configuration the kernels and the peak probe load (ldtilecfg): palette 1, the first
// eight tiles 16 rows x 64 bytes (a C tile of 16 x 16 f32, an A or B tile of 16 x 32 bf16).
#pragma once

#include <cstdint>

namespace laya::kernels {

struct alignas(64) AmxTileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {64, 64, 64, 64, 64, 64, 64, 64};
  uint8_t rows[16] = {16, 16, 16, 16, 16, 16, 16, 16};
};

}  // namespace laya::kernels
