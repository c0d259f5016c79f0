// A C++ heap-buffer-overflow for AddressSanitizer: frames in templates (std::map, std::vector),
// a lambda called through std::function, and operator new, so names exercise the demangler.
#include <cstddef>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace app {
template <typename T> struct Box {
    std::vector<T> items;
    T at(std::size_t index) const { return items.data()[index]; }
};

int run(int n) {
    Box<std::map<std::string, int>> boxes;
    boxes.items.resize(2);
    std::function<int(int)> size = [&](int k) { return static_cast<int>(boxes.at(k + n).size()); };
    return size(1);
}
} // namespace app

int main(int argc, char **) { return app::run(argc); }
