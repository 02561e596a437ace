// Execute allocates nothing: every execute after bind_memory and reshape (and every reshape) runs
// with a process-wide allocation counter on (tests/alloc_hook.h), on 1 and 2 threads, ref and auto
// kernels, both tiny models. The decoder runner's prefill chunks and decode steps. Also the CPU
// backend's thread pool on its own.
#include <doctest/doctest.h>

#include <oneapi/tbb/tbb_allocator.h>

#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "hal/cpu/thread_pool.h"
#include "runtime/decoder.h"
#include "runtime/prefix_cache.h"
#include "tests/alloc_hook.h"
#include "tests/runtime/session_util.h"

namespace laya::test {
namespace {

TEST_CASE("the allocation hook sees malloc, operator new and oneTBB's allocator") {
  REQUIRE(alloc_hook::tbbmalloc_shim_loaded());
  alloc_hook::start();
  void* volatile p = std::malloc(16);
  std::free(p);
  CHECK(alloc_hook::stop() == 2);
  alloc_hook::start();
  auto* volatile v = new std::vector<int>(100);
  delete v;
  CHECK(alloc_hook::stop() >= 2);
  // tbb_allocator goes through oneTBB's allocation handler (scalable_malloc when libtbbmalloc is
  // loaded): the stand-in must route it to the counted malloc.
  tbb::tbb_allocator<int> ta;
  alloc_hook::start();
  int* q = ta.allocate(64);
  ta.deallocate(q, 64);
  CHECK(alloc_hook::stop() >= 1);
}

TEST_CASE("reshape and execute allocate nothing (1 and 2 threads, ref and auto kernels)") {
  for (bool encoder : {true, false})
    for (int threads : {1, 2})
      for (const char* kernels : {"ref", "auto"}) {
        CAPTURE(encoder);
        CAPTURE(threads);
        const std::string kernels_name = kernels;
        CAPTURE(kernels_name);
        tools::TinyModelConfig cfg;
        auto g = encoder ? tools::make_tiny_encoder(cfg, 5) : tools::make_tiny_decoder(cfg, 5);
        REQUIRE(g.is_ok());
        TinyRun run = make_run(*g, cpu_options(kernels, threads));
        runtime::Session& s = *run.session;
        runtime::KvCache* cache = run.kv.cache.get();
        for (int64_t seq : {7, 40, 3}) {  // buckets 0, 2, 0
          CAPTURE(seq);
          const TinyInputs in = tiny_inputs(2, seq, cfg.vocab, encoder ? 2 : 0);
          // A decoder prefills batch row b as sequence b into a cleared cache.
          TokenCells tc;
          if (cache != nullptr) REQUIRE(prefill_cells(*cache, 2, seq, &tc).is_ok());
          const std::vector<int64_t> sym = tiny_symbols(*g, cache, 2, seq);
          alloc_hook::start();
          Status rs = s.reshape(sym);  // reshape allocates nothing either
          const long reshape_calls = alloc_hook::stop();
          REQUIRE(rs.is_ok());
          CHECK(reshape_calls == 0);
          std::vector<float> out(static_cast<size_t>(s.extents(g->outputs[0]).count()));
          const std::vector<const void*> inputs = tiny_input_ptrs(*g, cache, in, tc);
          void* outputs[1] = {out.data()};
          for (int rep = 0; rep < 3; ++rep) {  // the first execute after reshape counts too
            alloc_hook::start();
            Status st = s.execute(inputs, outputs);
            const long calls = alloc_hook::stop();
            REQUIRE(st.is_ok());
            INFO("first call on thread " << alloc_hook::first_thread() << ", execute ran on "
                                         << syscall(SYS_gettid));
            CHECK(calls == 0);
          }
        }
      }
}

TEST_CASE("the decoder runner: prefill chunks and every decode step allocate nothing") {
  for (int threads : {1, 2})
    for (const char* kernels : {"ref", "auto"})
      for (ir::DType kv : {ir::DType::kF32, ir::DType::kF16}) {  // f16: an f16 KV cache
        CAPTURE(threads);
        const std::string kernels_name = kernels;
        CAPTURE(kernels_name);
        CAPTURE(ir::dtype_name(kv));
        tools::TinyModelConfig cfg;
        cfg.kv_dtype = kv;
        auto g = tools::make_tiny_decoder(cfg, 5);
        REQUIRE(g.is_ok());
        const int64_t chunk = 8, cells = 64;
        auto so = runtime::decoder_session_options(cpu_options(kernels, threads), *g, chunk, cells);
        REQUIRE_MESSAGE(so.is_ok(), so.status().to_string());
        TinyRun run = make_run(*g, *so, cells);
        auto lb = runtime::DecoderRunner::logits_bytes(*g, chunk);
        REQUIRE(lb.is_ok());
        auto logits = runtime::RegionBuffer::alloc(*lb, runtime::kRegionAlign, false);
        REQUIRE(logits.is_ok());
        auto r =
            runtime::DecoderRunner::create(*run.session, *run.kv.cache, logits->region(), chunk);
        REQUIRE_MESSAGE(r.is_ok(), r.status().to_string());
        runtime::DecoderRunner& runner = **r;
        const TinyInputs in = tiny_inputs(1, 13, cfg.vocab, 0);
        for (int rep = 0; rep < 2; ++rep) {  // the first prefill and decode after create count too
          run.kv.cache->clear();
          alloc_hook::start();
          Status st = runner.prefill(0, in.ids);  // chunks of 8 and 5
          long calls = alloc_hook::stop();
          REQUIRE(st.is_ok());
          CHECK(calls == 0);
          for (int t = 0; t < 24; ++t) {
            const int32_t next = runtime::greedy_token(runner.last_logits(), nullptr);
            alloc_hook::start();
            st = runner.step(0, std::span(&next, 1));
            calls = alloc_hook::stop();
            REQUIRE(st.is_ok());
            CHECK(calls == 0);
          }
          CHECK(run.kv.cache->seq_length(0) == 13 + 24);
        }
        // The prefix cache: storing a prompt's blocks and restoring them allocate nothing either.
        auto layout = runtime::kv_cache_layout(*g);
        REQUIRE(layout.is_ok());
        runtime::PrefixCacheOptions po;
        po.block_tokens = 4;
        po.slots = 2;
        po.budget_bytes = 16 * layout->bytes_per_cell;
        auto pc = runtime::PrefixCache::create(*run.kv.cache, *layout, po);
        REQUIRE_MESSAGE(pc.is_ok(), pc.status().to_string());
        alloc_hook::start();
        const Status stored = (*pc)->store(in.ids, 0);
        const Result<int64_t> hit = (*pc)->restore(in.ids, 3);
        const long calls = alloc_hook::stop();
        REQUIRE(stored.is_ok());
        REQUIRE(hit.is_ok());
        CHECK(*hit == 12);
        CHECK(calls == 0);
      }
}

TEST_CASE("the ax8850 simulator allocates nothing either (chip and card, both activation modes)") {
  for (bool encoder : {true, false})
    for (const char* host : {"chip", "pcie"})
      for (ir::DType act : {ir::DType::kBF16, ir::DType::kF32}) {
        CAPTURE(encoder);
        CAPTURE(std::string(host));
        tools::TinyModelConfig cfg;
        cfg.matmul_dtype = ir::DType::kBF16;  // the NPU's weights; the f32 tables fall back
        auto g = encoder ? tools::make_tiny_encoder(cfg, 5) : tools::make_tiny_decoder(cfg, 5);
        REQUIRE(g.is_ok());
        runtime::SessionOptions o = cpu_options("auto", 2);
        o.backends = {"ax8850"};
        hal::BackendOptions npu;
        npu.settings = {{"host", host}, {"vnpu", "std"}, {"mac_efficiency", "0.0001"}};
        o.backend_options.emplace_back("ax8850", npu);
        o.activations = {{"ax8850", act}};
        o.schedule.cost_placement = false;
        TinyRun run = make_run(*g, o);
        runtime::Session& s = *run.session;
        int splits = 0;
        for (const runtime::NodePlacement& p : s.placement()) splits += !p.parts.empty();
        CHECK(splits > 0);
        runtime::KvCache* cache = run.kv.cache.get();
        for (int64_t seq : {7, 40}) {
          const TinyInputs in = tiny_inputs(2, seq, cfg.vocab, encoder ? 2 : 0);
          // The decoder prefills batch row b as sequence b; its kv_write runs on the NPU (on the
          // card into the cache it keeps in device memory).
          TokenCells tc;
          if (cache != nullptr) REQUIRE(prefill_cells(*cache, 2, seq, &tc).is_ok());
          const std::vector<int64_t> sym = tiny_symbols(*g, cache, 2, seq);
          alloc_hook::start();
          Status rs = s.reshape(sym);
          CHECK(alloc_hook::stop() == 0);
          REQUIRE(rs.is_ok());
          std::vector<float> out(static_cast<size_t>(s.extents(g->outputs[0]).count()));
          const std::vector<const void*> inputs = tiny_input_ptrs(*g, cache, in, tc);
          void* outputs[1] = {out.data()};
          for (int rep = 0; rep < 2; ++rep) {
            alloc_hook::start();
            Status st = s.execute(inputs, outputs);
            const long calls = alloc_hook::stop();
            REQUIRE(st.is_ok());
            CHECK(calls == 0);
          }
          if (cache != nullptr) {  // the owner's copy, taken in by the card (state_written)
            alloc_hook::start();
            Status st = cache->copy_seq(0, 2, seq);
            const long calls = alloc_hook::stop();
            REQUIRE_MESSAGE(st.is_ok(), st.to_string());
            CHECK(calls == 0);
          }
        }
      }
}

TEST_CASE("decoding through the KV cache allocates nothing per token (cache, reshape, execute)") {
  for (int threads : {1, 2})
    for (const char* kernels : {"ref", "auto"}) {
      CAPTURE(threads);
      const std::string kernels_name = kernels;
      CAPTURE(kernels_name);
      tools::TinyModelConfig cfg;
      auto g = tools::make_tiny_decoder(cfg, 5);
      REQUIRE(g.is_ok());
      runtime::SessionOptions o = cpu_options(kernels, threads);
      o.bucket_bounds = {{"seq", {1, 16}}, {"cells", {64}}};
      o.symbol_max = {{"cells", 64}};
      TinyRun run = make_run(*g, o, 64);
      runtime::Session& s = *run.session;
      runtime::KvCache& cache = *run.kv.cache;
      // Buffers for the largest step, made before counting.
      TinyInputs in = tiny_inputs(1, 16, cfg.vocab, 0);
      TokenCells tc;
      tc.cells.resize(16);
      tc.seq_ids.assign(16, 0);
      std::vector<float> out(static_cast<size_t>(16 * cfg.vocab));
      const std::vector<const void*> inputs = tiny_input_ptrs(*g, &cache, in, tc);
      void* outputs[1] = {out.data()};
      std::vector<int64_t> sym = tiny_symbols(*g, &cache, 1, 1);
      const size_t seq_sym = static_cast<size_t>(g->find_symbol("seq"));
      // A prefill chunk of 9 tokens, then 20 tokens one at a time; then the sequence is dropped
      // and another one starts (a request ends).
      for (int request = 0; request < 2; ++request)
        for (int64_t step = 0; step < 21; ++step) {
          CAPTURE(request);
          CAPTURE(step);
          const int64_t n = step == 0 ? 9 : 1;
          const int32_t seq = request;
          for (int64_t i = 0; i < n; ++i) tc.seq_ids[static_cast<size_t>(i)] = seq;
          sym[seq_sym] = n;
          alloc_hook::start();
          Status st = cache.alloc(seq, n, tc.cells.data(), in.positions.data());
          if (st.is_ok()) st = s.reshape(sym);
          if (st.is_ok()) st = s.execute(inputs, outputs);
          if (st.is_ok() && step == 20) st = cache.remove(seq);
          const long calls = alloc_hook::stop();
          REQUIRE_MESSAGE(st.is_ok(), st.to_string());
          CHECK(s.current_bucket() == (n == 1 ? 0 : 1));
          CHECK(calls == 0);
        }
      CHECK(cache.n_free() == cache.capacity());
    }
}

TEST_CASE("execute and reshape allocate nothing on their error paths either") {
  for (int threads : {1, 2}) {
    CAPTURE(threads);
    tools::TinyModelConfig cfg;
    auto g = tools::make_tiny_encoder(cfg, 5);
    REQUIRE(g.is_ok());
    TinyRun run = make_run(*g, cpu_options("auto", threads));
    runtime::Session& s = *run.session;
    const int64_t seq = 9;
    TinyInputs in = tiny_inputs(2, seq, cfg.vocab, 2);
    in.ids[5] = static_cast<int32_t>(cfg.vocab) + 3;  // an id outside the vocabulary
    std::vector<float> out(static_cast<size_t>(2 * seq * 1024));
    std::vector<const void*> inputs = {in.ids.data(), in.positions.data(), in.key_mask.data()};
    void* outputs[1] = {out.data()};

    const int64_t bad_sym[2] = {2, 100000};  // seq beyond its bound
    alloc_hook::start();
    Status bad_reshape = s.reshape(bad_sym);
    CHECK(alloc_hook::stop() == 0);
    CHECK(bad_reshape.code() == StatusCode::kOutOfRange);

    const int64_t sym[2] = {2, seq};
    REQUIRE(s.reshape(sym).is_ok());
    REQUIRE(static_cast<size_t>(s.extents(g->outputs[0]).count()) <= out.size());
    alloc_hook::start();
    Status st = s.execute(inputs, outputs);
    const long calls = alloc_hook::stop();
    CHECK(st.code() == StatusCode::kIndexOutOfRange);
    CHECK(calls == 0);
#if !LAYA_STRIP_MESSAGES
    CHECK(std::string(st.message()).find(std::to_string(cfg.vocab + 3)) != std::string::npos);
#endif

    alloc_hook::start();
    Status wrong_count = s.execute(std::span<const void* const>(inputs.data(), 1), outputs);
    CHECK(alloc_hook::stop() == 0);
    CHECK(wrong_count.code() == StatusCode::kInvalidArgument);
  }
}

struct Cover {
  std::vector<std::atomic<int>>* hits;
  std::atomic<int>* bad_len;
  std::atomic<int>* other_thread;
  std::thread::id caller;
  int64_t n, grain;
};

void cover_range(void* ctx, int64_t b, int64_t e) {
  auto* c = static_cast<Cover*>(ctx);
  if ((e - b) % c->grain != 0 && e != c->n) c->bad_len->fetch_add(1);
  if (b % c->grain != 0) c->bad_len->fetch_add(1);
  if (std::this_thread::get_id() != c->caller) c->other_thread->fetch_add(1);
  for (int64_t i = b; i < e; ++i) (*c->hits)[static_cast<size_t>(i)].fetch_add(1);
  std::atomic<int> spin{0};  // a little work per chunk, so the worker gets some
  while (spin.fetch_add(1, std::memory_order_relaxed) < 2000) {
  }
}

// The thread-pool tests need a second CPU (not under e.g. taskset -c 0); says so when skipped.
bool has_two_cpus(const hal::cpu::ArenaPool& pool) {
  if (pool.n_threads() >= 2) return true;
  MESSAGE("skipped: the test needs 2 CPUs in this process's affinity mask; it has 1");
  return false;
}

TEST_CASE(
    "cpu thread pool: covers the range once, in grain multiples, on 2 threads, no allocation") {
  // Every CPU backend leases its threads from the process pool (the default device holds it, so
  // its workers run for the whole test binary): a lease of 2 of them.
  const std::shared_ptr<hal::cpu::ArenaPool> shared = hal::cpu::ArenaPool::shared();
  if (!has_two_cpus(*shared)) return;
  hal::cpu::PoolLease pool(shared, 2);
  REQUIRE(pool.n_threads() == 2);
  REQUIRE(pool.warm_up(5000) == shared->n_threads() - 1);  // the worker loops run
  const kernels::ThreadPool* view = pool.view();
  std::atomic<int> bad_len{0}, other{0};
  for (int64_t n : {1, 7, 64, 1000, 4097})
    for (int64_t grain : {1, 4, 16}) {
      std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
      Cover c{&hits, &bad_len, &other, std::this_thread::get_id(), n, grain};
      for (int rep = 0; rep < 200; ++rep) {
        alloc_hook::start();
        view->run(view->impl, n, grain, cover_range, &c);
        const long calls = alloc_hook::stop();
        REQUIRE(calls == 0);
      }
      for (auto& h : hits) REQUIRE(h.load() == 200);
    }
  CHECK(bad_len.load() == 0);
  CHECK(other.load() > 0);  // the worker took chunks

  // A nested run (from inside a chunk) runs serially instead of deadlocking.
  struct Nested {
    const kernels::ThreadPool* pool;
    std::atomic<int64_t> sum{0};
  } nested{view};
  view->run(
      view->impl, 64, 1,
      [](void* ctx, int64_t b, int64_t e) {
        auto* n = static_cast<Nested*>(ctx);
        for (int64_t i = b; i < e; ++i)
          n->pool->run(
              n->pool->impl, 10, 1,
              [](void* c2, int64_t b2, int64_t e2) {
                static_cast<Nested*>(c2)->sum.fetch_add(e2 - b2);
              },
              n);
      },
      &nested);
  CHECK(nested.sum.load() == 640);

  // A lease of one thread runs every chunk on its caller: no worker joins.
  hal::cpu::PoolLease one(shared, 1);
  REQUIRE(one.n_threads() == 1);
  std::atomic<int> other_one{0};
  std::vector<std::atomic<int>> hits(1000);
  Cover c{&hits, &bad_len, &other_one, std::this_thread::get_id(), 1000, 4};
  for (int rep = 0; rep < 50; ++rep) one.view()->run(one.view()->impl, 1000, 4, cover_range, &c);
  for (auto& h : hits) REQUIRE(h.load() == 50);
  CHECK(other_one.load() == 0);
}

TEST_CASE("cpu thread pool: two leases of the process pool (two sessions) both get its workers") {
  // Before the process pool each CPU backend made its own arena; oneTBB gives a process
  // n_cores - 1 workers, so the second backend's arena got none and ran every job on its caller.
  const std::shared_ptr<hal::cpu::ArenaPool> shared = hal::cpu::ArenaPool::shared();
  if (!has_two_cpus(*shared)) return;
  hal::cpu::PoolLease a(shared, 0), b(shared, shared->n_threads());
  CHECK(a.n_threads() == 1);  // clamped to [1, the pool's threads]
  REQUIRE(b.warm_up(5000) == shared->n_threads() - 1);
  hal::cpu::PoolLease c(shared, shared->n_threads());
  for (const hal::cpu::PoolLease* lease : {&b, &c}) {
    std::atomic<int> bad_len{0}, other{0};
    std::vector<std::atomic<int>> hits(4096);
    Cover cv{&hits, &bad_len, &other, std::this_thread::get_id(), 4096, 16};
    // On a loaded machine a worker may miss a short job; one without workers misses them all.
    int reps = 0;
    for (; reps < 5000 && other.load() == 0; ++reps)
      lease->view()->run(lease->view()->impl, 4096, 16, cover_range, &cv);
    for (auto& h : hits) REQUIRE(h.load() == reps);
    CHECK(bad_len.load() == 0);
    CHECK(other.load() > 0);  // a worker took chunks of this lease's jobs
  }
}

TEST_CASE("cpu thread pool: back-to-back jobs of different sizes never mix their chunks") {
  // A worker that is late for one job must not claim a chunk of the next one with mixed
  // parameters (or count it as done for the wrong job): alternate small and large jobs with
  // distinct contexts and check each job covered its own range exactly once.
  const std::shared_ptr<hal::cpu::ArenaPool> shared = hal::cpu::ArenaPool::shared();
  hal::cpu::PoolLease pool(shared, 2);
  REQUIRE(pool.warm_up(5000) == shared->n_threads() - 1);
  const kernels::ThreadPool* view = pool.view();
  struct Job {
    std::vector<int> hits;
  };
  Job small, large;
  small.hits.resize(3);
  large.hits.resize(257);
  auto fn = [](void* ctx, int64_t b, int64_t e) {
    auto* j = static_cast<Job*>(ctx);
    for (int64_t i = b; i < e; ++i) j->hits[static_cast<size_t>(i)] += 1;
  };
  for (int rep = 0; rep < 20000; ++rep) {
    Job& j = rep % 2 ? large : small;
    std::fill(j.hits.begin(), j.hits.end(), 0);
    view->run(view->impl, static_cast<int64_t>(j.hits.size()), 1, fn, &j);
    for (int h : j.hits) REQUIRE(h == 1);
  }
}

}  // namespace
}  // namespace laya::test
