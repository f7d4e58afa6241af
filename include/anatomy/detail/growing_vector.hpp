// A growable vector for the allocator replay, cheap in constant evaluation.
//
// In constant evaluation every std::vector member is a chain of function
// calls that g++ counts against -fconstexpr-ops-limit, with libstdc++'s
// assertions on: a statement with two subscripts costs about 60
// operations, push_back with pop_back 378, an insert at the front with its
// erase 1,860 (bench/constexpr_vector_costs.sh). A replay makes tens of
// thousands of such calls. This vector keeps its own pointer, length and
// capacity and reads and writes its elements through the pointer; the
// std::vector beneath is touched only to grow, which doubles it. At run
// time it is a plain array.
#pragma once

#include <cstddef>
#include <type_traits>
#include <vector>

namespace anatomy::detail {

template <class T>
class growing_vector {
    static_assert(std::is_trivially_copyable_v<T>, "anatomy::detail::growing_vector: T must be trivially copyable");

public:
    constexpr growing_vector() = default;
    // A copy points at its own storage; a move takes the storage, and leaves
    // the other empty.
    constexpr growing_vector(const growing_vector& other)
        : store_(other.store_), data_(store_.data()), size_(other.size_), capacity_(other.capacity_) {}
    constexpr growing_vector(growing_vector&& other) noexcept
        : store_(static_cast<std::vector<T>&&>(other.store_)), data_(store_.data()), size_(other.size_),
          capacity_(other.capacity_) {
        other.forget();
    }
    constexpr growing_vector& operator=(const growing_vector& other) {
        if (this != &other) *this = growing_vector(other);
        return *this;
    }
    constexpr growing_vector& operator=(growing_vector&& other) noexcept {
        if (this == &other) return *this;
        store_ = static_cast<std::vector<T>&&>(other.store_);
        data_ = store_.data();
        size_ = other.size_;
        capacity_ = other.capacity_;
        other.forget();
        return *this;
    }

    constexpr std::size_t size() const { return size_; }
    constexpr bool empty() const { return size_ == 0; }
    constexpr T* data() { return data_; }
    constexpr const T* data() const { return data_; }
    constexpr T& operator[](std::size_t i) { return data_[i]; }
    constexpr const T& operator[](std::size_t i) const { return data_[i]; }
    constexpr T& back() { return data_[size_ - 1]; }
    constexpr T* begin() { return data_; }
    constexpr T* end() { return data_ + size_; }
    constexpr const T* begin() const { return data_; }
    constexpr const T* end() const { return data_ + size_; }

    constexpr void push_back(const T& value) {
        if (size_ == capacity_) grow();
        data_[size_++] = value;
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
    // Room for `n` elements at least; growing, at least doubles.
    constexpr void reserve(std::size_t n) {
        if (n > capacity_) grow_to(n > 2 * capacity_ ? n : 2 * capacity_);
    }

private:
    constexpr void forget() {
        store_.clear();
        data_ = nullptr;
        size_ = capacity_ = 0;
    }
    constexpr void grow() { grow_to(capacity_ == 0 ? 8 : 2 * capacity_); }
    // Not std::vector::resize: with libstdc++ 12 clang rejects its
    // default-initialization of trivial elements in constant evaluation.
    constexpr void grow_to(std::size_t capacity) {
        std::vector<T> bigger(capacity, T{});
        T* to = bigger.data();
        for (std::size_t i = 0; i < size_; ++i) to[i] = data_[i];  // rare: growth doubles
        store_.swap(bigger);
        data_ = store_.data();
        capacity_ = capacity;
    }

    // The elements live in store_, and data_ and capacity_ are its data()
    // and size(): in constant evaluation each of those is a chain of calls.
    std::vector<T> store_;
    T* data_ = nullptr;
    std::size_t size_ = 0;
    std::size_t capacity_ = 0;
};

}  // namespace anatomy::detail
