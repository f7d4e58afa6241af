// A growable vector for the allocator replay, cheap in constant evaluation.
//
// In constant evaluation every std::vector member is a chain of function
// calls that g++ counts against -fconstexpr-ops-limit, with libstdc++'s
// assertions on: a statement with two subscripts costs about 60
// operations, push_back with pop_back 378, an insert at the front with its
// erase 1,860 (bench/constexpr_vector_costs.sh). A replay makes tens of
// thousands of such calls. This vector keeps its own length and reads and
// writes its elements through a pointer; the std::vector beneath is touched
// only to grow, which doubles it. At run time it is a plain array.
#pragma once

#include <cstddef>
#include <cstring>
#include <type_traits>
#include <vector>

namespace anatomy::detail {

template <class T>
class growing_vector {
    static_assert(std::is_trivially_copyable_v<T>, "anatomy::detail::growing_vector: T must be trivially copyable");

public:
    constexpr std::size_t size() const { return size_; }
    constexpr bool empty() const { return size_ == 0; }
    constexpr T* data() { return store_.data(); }
    constexpr const T* data() const { return store_.data(); }
    constexpr T& operator[](std::size_t i) { return store_.data()[i]; }
    constexpr const T& operator[](std::size_t i) const { return store_.data()[i]; }
    constexpr T& back() { return store_.data()[size_ - 1]; }
    constexpr T* begin() { return store_.data(); }
    constexpr T* end() { return store_.data() + size_; }
    constexpr const T* begin() const { return store_.data(); }
    constexpr const T* end() const { return store_.data() + size_; }

    constexpr void push_back(const T& value) {
        if (size_ == store_.size()) grow();
        store_.data()[size_++] = value;
    }
    constexpr void pop_back() { --size_; }
    // Keeps the first `n` elements (n <= size()).
    constexpr void truncate(std::size_t n) { size_ = n; }
    // Appends `n` elements to be written through data(); their values are
    // whatever the storage held.
    constexpr void extend(std::size_t n) {
        reserve(size_ + n);
        size_ += n;
    }
    constexpr void clear() { size_ = 0; }
    constexpr void insert(std::size_t at, const T& value) {
        if (size_ == store_.size()) grow();
        T* d = store_.data();
        move_elements(d + at, d + at + 1, size_ - at, towards::end);
        d[at] = value;
        ++size_;
    }
    constexpr void erase(std::size_t at) {
        T* d = store_.data();
        move_elements(d + at + 1, d + at, size_ - at - 1, towards::front);
        --size_;
    }
    // Room for `n` elements at least; growing, at least doubles.
    constexpr void reserve(std::size_t n) {
        if (n > store_.size()) grow_to(n > 2 * store_.size() ? n : 2 * store_.size());
    }

private:
    // Moves `n` elements from `from` to `to`. Ranges that overlap are moved
    // towards the end of the array (an insert) or its front (an erase); the
    // direction is given, since constant evaluation cannot compare pointers
    // into two arrays.
    enum class towards : bool { front, end };
    static constexpr void move_elements(const T* from, T* to, std::size_t n, towards direction) {
        if (n == 0) return;
        if (n == 1) {
            *to = *from;  // most moves in the free lists: no call (libstdc++'s move does the same)
        } else if (!std::is_constant_evaluated()) {
            std::memmove(to, from, n * sizeof(T));  // what std::vector's insert and erase call
        } else if (direction == towards::end) {
            for (std::size_t i = n; i-- > 0;) to[i] = from[i];
        } else {
            for (std::size_t i = 0; i < n; ++i) to[i] = from[i];
        }
    }
    constexpr void grow() { grow_to(store_.empty() ? 8 : 2 * store_.size()); }
    // Not std::vector::resize: with libstdc++ 12 clang rejects its
    // default-initialization of trivial elements in constant evaluation.
    constexpr void grow_to(std::size_t capacity) {
        std::vector<T> bigger(capacity, T{});
        move_elements(store_.data(), bigger.data(), size_, towards::front);
        store_.swap(bigger);
    }

    std::vector<T> store_;  // its size is the capacity; only [0, size_) is the vector's
    std::size_t size_ = 0;
};

}  // namespace anatomy::detail
