// A fixed-capacity vector for constant evaluation: the op graph and kernel
// lists live in one without dynamic allocation. Slots past size() are left
// uninitialized (C++20 allows that in constant evaluation too) and copies copy
// only the live elements: zero-filling the capacity cost more than the walk.
#pragma once

#include <anatomy/error.hpp>

#include <array>
#include <cstddef>

namespace anatomy::detail {

template <class T, std::size_t Capacity>
class static_vector {
public:
    constexpr static_vector() {}  // leaves items_ uninitialized
    constexpr static_vector(const static_vector& other) : size_(other.size_) {
        for (std::size_t i = 0; i < size_; ++i) items_[i] = other.items_[i];
    }
    constexpr static_vector& operator=(const static_vector& other) {
        size_ = other.size_;
        for (std::size_t i = 0; i < size_; ++i) items_[i] = other.items_[i];
        return *this;
    }

    constexpr void push_back(const T& value) {
        if (size_ == Capacity) throw error("anatomy: a fixed-capacity list is full; the model has more ops per stage than the library supports");
        items_[size_++] = value;
    }
    constexpr std::size_t size() const { return size_; }
    constexpr bool empty() const { return size_ == 0; }
    constexpr const T* begin() const { return items_.data(); }
    constexpr const T* end() const { return items_.data() + size_; }
    constexpr T* begin() { return items_.data(); }
    constexpr T* end() { return items_.data() + size_; }
    constexpr const T& operator[](std::size_t i) const { return items_[i]; }
    constexpr T& operator[](std::size_t i) { return items_[i]; }
    constexpr T& back() { return items_[size_ - 1]; }

private:
    std::array<T, Capacity> items_;
    std::size_t size_ = 0;
};

}  // namespace anatomy::detail
