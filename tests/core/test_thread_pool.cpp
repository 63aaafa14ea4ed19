#define BOOST_TEST_MODULE thread_pool
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <numeric>
#include <stdexcept>
#include <vector>

#include "archetype/core/thread_pool.hpp"

using archetype::thread_pool;

BOOST_AUTO_TEST_CASE(every_index_once_for_many_sizes_and_thread_counts) {
    for (std::size_t threads : {1u, 2u, 3u, 8u}) {
        thread_pool pool(threads);
        for (std::size_t n : {1u, 2u, 7u, 63u, 64u, 65u, 1000u}) {
            for (int rep = 0; rep < 50; ++rep) {
                std::vector<std::atomic<int>> hits(n);
                pool.parallel_for(n, [&](std::size_t b, std::size_t e) {
                    BOOST_REQUIRE_LT(b, e);
                    for (std::size_t i = b; i < e; ++i) hits[i]++;
                });
                for (std::size_t i = 0; i < n; ++i) BOOST_REQUIRE_EQUAL(hits[i].load(), 1);
            }
        }
    }
}

BOOST_AUTO_TEST_CASE(dynamic_tasks_each_once) {
    thread_pool pool(3);
    std::vector<std::atomic<int>> hits(997);
    pool.for_each_task(hits.size(), [&](std::size_t i) { hits[i]++; });
    for (auto& h : hits) BOOST_REQUIRE_EQUAL(h.load(), 1);
}

BOOST_AUTO_TEST_CASE(nested_calls_run_serially_without_deadlock) {
    thread_pool pool(2);
    std::atomic<int> total{0};
    pool.parallel_for(4, [&](std::size_t b, std::size_t e) {
        for (std::size_t i = b; i < e; ++i)
            pool.parallel_for(10, [&](std::size_t b2, std::size_t e2) { total += int(e2 - b2); });
    });
    BOOST_TEST(total.load() == 40);
}

BOOST_AUTO_TEST_CASE(exception_reaches_caller_and_pool_stays_usable) {
    thread_pool pool(2);
    BOOST_CHECK_THROW(pool.parallel_for(8, [&](std::size_t b, std::size_t) {
        if (b >= 4) throw std::runtime_error("boom");
    }), std::runtime_error);
    std::atomic<int> n{0};
    pool.parallel_for(100, [&](std::size_t b, std::size_t e) { n += int(e - b); });
    BOOST_TEST(n.load() == 100);
}

// Regression: a worker late from one job must never take a part of the next
// (it used to burn part 0 of the next job, which then waited forever).
BOOST_AUTO_TEST_CASE(many_back_to_back_tiny_jobs_complete) {
    for (std::size_t threads : {2u, 3u}) {
        thread_pool pool(threads);
        std::atomic<long> sum{0};
        for (int job = 0; job < 20000; ++job)
            pool.parallel_for(threads, [&](std::size_t b, std::size_t e) { sum += long(e - b); });
        BOOST_TEST(sum.load() == 20000L * long(threads));
    }
}
