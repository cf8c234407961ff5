// backends/cuda/codegen/plan.cpp — the CUDA plan payload's saved form (plan.h).
#include "backends/cuda/codegen/plan.h"

#include <charconv>
#include <string_view>

namespace ferry::cuda {

namespace {

constexpr std::string_view kMagic = "ferry-cuda-plan 2";
constexpr std::string_view kMagicWithoutCubins = "ferry-cuda-plan 1";
constexpr Epilogue kEpilogues[] = {Epilogue::None, Epilogue::Bias, Epilogue::ReluBias,
                                   Epilogue::GeluBias, Epilogue::Relu, Epilogue::Gelu};

Status bad(const std::string &field, const std::string &why) {
  return makeError("format", "CUDA kernel plan: " + field + ": " + why);
}

// The cubins a plan may have, and the one GPU architecture each is loaded on.
struct CubinKind {
  KernelImage image;
  int major, minor;
};
constexpr CubinKind kCubins[] = {{KernelImage::CubinSm80, 8, 0}, {KernelImage::CubinSm90, 9, 0}};

}  // namespace

int cubinArchitecture(std::string_view image) {
  // The ELF64 header: e_ident (the magic, class 2: 64-bit, data 1: little-endian, and at byte 8
  // the ABI version), e_machine at 18 (EM_CUDA: 190), e_flags at 48.
  if (image.size() < 64 || image.substr(0, 4) != "\177ELF" || image[4] != 2 || image[5] != 1)
    return 0;
  auto byte = [&](size_t at) { return static_cast<uint32_t>(static_cast<uint8_t>(image[at])); };
  if ((byte(18) | (byte(19) << 8)) != 190) return 0;
  const uint32_t flags = byte(48) | (byte(49) << 8) | (byte(50) << 16) | (byte(51) << 24);
  // EF_CUDA_SM: the low byte in CUDA's ELF ABI version 7, bits 8 to 15 in version 8 (CUDA 13's),
  // as LLVM's BinaryFormat/ELF.h reads them.
  switch (byte(8)) {
    case 7: return static_cast<int>(flags & 0xff);
    case 8: return static_cast<int>((flags >> 8) & 0xff);
    default: return 0;
  }
}

KernelImage CudaPlan::imageFor(int major, int minor, bool anchor) const {
  for (const CubinKind &c : kCubins)
    if (major == c.major && minor == c.minor &&
        cubinArchitecture(image(c.image, anchor)) == c.major * 10 + c.minor)
      return c.image;
  return KernelImage::Ptx;
}

const std::string &CudaPlan::image(KernelImage which, bool anchor) const {
  switch (which) {
    case KernelImage::Ptx: return anchor ? anchorPtx : ptx;
    case KernelImage::CubinSm80: return anchor ? anchorCubinSm80 : cubinSm80;
    case KernelImage::CubinSm90: return anchor ? anchorCubinSm90 : cubinSm90;
  }
  return ptx;
}

const char *epilogueName(Epilogue e) {
  switch (e) {
    case Epilogue::None: return "none";
    case Epilogue::Bias: return "bias";
    case Epilogue::ReluBias: return "relu_bias";
    case Epilogue::GeluBias: return "gelu_bias";
    case Epilogue::Relu: return "relu";
    case Epilogue::Gelu: return "gelu";
  }
  return "?";
}

std::string CudaPlan::encode() const {
  std::string s(kMagic);
  s += "\nblocks " + std::to_string(blocks) + "\nthreads " + std::to_string(threads) +
       "\ninputs " + std::to_string(inputs) + "\nblock_sync " + (blockSync ? "1" : "0") +
       "\nsource_hash " + std::to_string(sourceHash) + "\nepilogue " + epilogueName(epilogue) +
       "\ngemm_micro_ops " + std::to_string(gemmMicroOps) + "\ngemm_output_offset " +
       std::to_string(gemmOutputOffset) + "\ngemm_workspace_bytes " +
       std::to_string(gemmWorkspaceBytes) + "\n" +
       (gemmColOffset >= 0 ? "gemm_col_offset " + std::to_string(gemmColOffset) + "\n" : "") +
       "anchor_blocks " + std::to_string(anchorBlocks) +
       "\nanchor_threads " + std::to_string(anchorThreads) + "\nanchor_block_sync " +
       (anchorBlockSync ? "1" : "0") + "\n";
  for (const auto &[key, blob] :
       {std::pair{"anchor_source", &anchorSource}, std::pair{"anchor_ptx", &anchorPtx},
        std::pair{"anchor_cubin_sm80", &anchorCubinSm80},
        std::pair{"anchor_cubin_sm90", &anchorCubinSm90}, std::pair{"source", &source},
        std::pair{"ptx", &ptx}, std::pair{"cubin_sm80", &cubinSm80}})
    s += std::string(key) + " " + std::to_string(blob->size()) + "\n" + *blob + "\n";
  s += "cubin_sm90 " + std::to_string(cubinSm90.size()) + "\n";
  s += cubinSm90;
  return s;
}

Expected<CudaPlan> CudaPlan::decode(const std::string &payload) {
  std::string_view rest = payload;
  auto line = [&]() -> std::string_view {
    const size_t end = rest.find('\n');
    if (end == std::string_view::npos) {
      std::string_view l = rest;
      rest = {};
      return l;
    }
    std::string_view l = rest.substr(0, end);
    rest.remove_prefix(end + 1);
    return l;
  };
  const std::string_view header = line();
  if (header != kMagic && header != kMagicWithoutCubins)
    return bad("header", "expected '" + std::string(kMagic) + "' (or '" +
                             std::string(kMagicWithoutCubins) + "', without cubins)");
  const bool cubins = header == kMagic;
  CudaPlan p;
  // Each field in order: `key value`, the value a decimal integer in [lo, hi].
  auto field = [&](std::string_view key, int64_t lo, int64_t hi, auto &out) -> Status {
    const std::string_view l = line();
    if (l.substr(0, key.size()) != key || l.size() <= key.size() || l[key.size()] != ' ')
      return bad(std::string(key), "expected the line '" + std::string(key) + " <value>', got '" +
                                       std::string(l.substr(0, 40)) + "'");
    const std::string_view v = l.substr(key.size() + 1);
    int64_t x = 0;
    const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
    if (ec != std::errc() || end != v.data() + v.size() || x < lo || x > hi)
      return bad(std::string(key), "expected an integer in [" + std::to_string(lo) + ", " +
                                       std::to_string(hi) + "], got '" + std::string(v.substr(0, 40)) + "'");
    out = static_cast<std::remove_reference_t<decltype(out)>>(x);
    return Status();
  };
  int64_t sync = 0;
  FERRY_TRY(field("blocks", 1, int64_t{1} << 31, p.blocks));
  FERRY_TRY(field("threads", 1, 1024, p.threads));
  FERRY_TRY(field("inputs", 0, 4096, p.inputs));
  FERRY_TRY(field("block_sync", 0, 1, sync));
  p.blockSync = sync != 0;
  {  // the hash is unsigned: parsed as such
    const std::string_view l = line();
    constexpr std::string_view key = "source_hash ";
    uint64_t h = 0;
    const std::string_view v = l.substr(std::min(l.size(), key.size()));
    const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), h);
    if (l.substr(0, key.size()) != key || ec != std::errc() || end != v.data() + v.size())
      return bad("source_hash", "expected an unsigned integer");
    p.sourceHash = h;
  }
  {
    const std::string_view l = line();
    constexpr std::string_view key = "epilogue ";
    bool found = false;
    for (Epilogue e : kEpilogues)
      if (l.substr(0, key.size()) == key && l.substr(key.size()) == epilogueName(e)) {
        p.epilogue = e;
        found = true;
      }
    if (!found)
      return bad("epilogue", "expected none, bias, relu_bias, gelu_bias, relu or gelu, got '" +
                                 std::string(l.substr(0, 40)) + "'");
  }
  FERRY_TRY(field("gemm_micro_ops", 0, 1 << 20, p.gemmMicroOps));
  FERRY_TRY(field("gemm_output_offset", -1, int64_t{1} << 50, p.gemmOutputOffset));
  FERRY_TRY(field("gemm_workspace_bytes", 0, int64_t{1} << 40, p.gemmWorkspaceBytes));
  if (rest.starts_with("gemm_col_offset "))  // only in a conv2d's GEMM
    FERRY_TRY(field("gemm_col_offset", 0, int64_t{1} << 50, p.gemmColOffset));
  int64_t anchorSync = 0;
  FERRY_TRY(field("anchor_blocks", 1, int64_t{1} << 31, p.anchorBlocks));
  FERRY_TRY(field("anchor_threads", 1, 1024, p.anchorThreads));
  FERRY_TRY(field("anchor_block_sync", 0, 1, anchorSync));
  p.anchorBlockSync = anchorSync != 0;
  // The blobs: `key <n>`, a newline, n bytes and a newline (the last one without).
  auto blob = [&](std::string_view key, std::string &out, bool last) -> Status {
    int64_t n = 0;
    FERRY_TRY(field(key, 0, int64_t{1} << 31, n));
    const size_t bytes = static_cast<size_t>(n);
    if (last ? bytes != rest.size() : bytes >= rest.size() || rest[bytes] != '\n')
      return bad(std::string(key), std::to_string(n) + " bytes announced" +
                                       (last ? "" : ", then a newline") + "; " +
                                       std::to_string(rest.size()) + " bytes follow");
    out = std::string(rest.substr(0, bytes));
    rest.remove_prefix(last ? bytes : bytes + 1);
    return Status();
  };
  FERRY_TRY(blob("anchor_source", p.anchorSource, false));
  FERRY_TRY(blob("anchor_ptx", p.anchorPtx, false));
  if (cubins) {
    FERRY_TRY(blob("anchor_cubin_sm80", p.anchorCubinSm80, false));
    FERRY_TRY(blob("anchor_cubin_sm90", p.anchorCubinSm90, false));
  }
  FERRY_TRY(blob("source", p.source, false));
  FERRY_TRY(blob("ptx", p.ptx, !cubins));
  if (cubins) {
    FERRY_TRY(blob("cubin_sm80", p.cubinSm80, false));
    FERRY_TRY(blob("cubin_sm90", p.cubinSm90, true));
  }
  return p;
}

}  // namespace ferry::cuda
