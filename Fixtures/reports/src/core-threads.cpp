// A multi-threaded C++ program that dumps core (see ../README.md): workers wait on a condition
// variable while one of them aborts from inside a template method.
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

namespace fixture {
std::mutex lock;
std::condition_variable wake;
bool done = false;

template <typename T> struct Worker {
    T value;
    __attribute__((noinline)) void wait() {
        std::unique_lock<std::mutex> guard(lock);
        wake.wait(guard, [] { return done; });
    }
    __attribute__((noinline)) void fail() {
        if (value > 0) std::abort();
    }
};
} // namespace fixture

int main() {
    std::vector<std::thread> threads;
    for (int i = 0; i < 3; i++) threads.emplace_back([] { fixture::Worker<long>{0}.wait(); });
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    std::thread([] { fixture::Worker<int>{1}.fail(); }).join();
    for (auto &thread : threads) thread.join();
    return 0;
}
