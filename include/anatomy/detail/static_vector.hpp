// A fixed-capacity vector for constant evaluation: the op graph and kernel
// lists live in one without dynamic allocation. Slots past size() are never
// constructed: each is a union, built in place by push_back. A plain
// std::array<T, N> would default-construct every slot, and a T with a
// string_view or a bytes member is then zeroed at run time, capacity and
// all: 213 KB for each op_graph, 30 KB for each kernel list, most of a plain
// estimate's instructions. Copies copy only the live elements.
//
// The slots are a built-in array, as are the walk's per-slot arrays
// (timeline.hpp) and a kernel's inputs: in constant evaluation each
// std::array subscript is a function call, and g++ counts and pays for it.
// Built-in arrays took a llama-3-8b estimate from 589,824 to 370,688
// operations (docs/performance.md).
#pragma once

#include <anatomy/error.hpp>

#include <cstddef>
#include <type_traits>
// For std::construct_at, which the standard puts in <memory>: every standard
// library's <vector> defines it too (libstdc++, libc++ and MSVC's constexpr
// vector is built on it), and <memory> would cost each TU about 0.25 s.
#include <vector>

namespace anatomy::detail {

template <class T, std::size_t Capacity>
class static_vector {
    static_assert(std::is_trivially_destructible_v<T>, "anatomy::detail::static_vector: T must be trivially destructible");

    union slot {
        constexpr slot() {}  // no active member: not constructed
        T value;
    };

    // Walks the slots; a T* would step between the members of distinct
    // unions, which constant evaluation rejects.
    template <class Slot, class Value>
    class basic_iterator {
    public:
        constexpr explicit basic_iterator(Slot* at) : at_(at) {}
        constexpr Value& operator*() const { return at_->value; }
        constexpr Value* operator->() const { return &at_->value; }
        constexpr basic_iterator& operator++() {
            ++at_;
            return *this;
        }
        constexpr bool operator==(const basic_iterator&) const = default;

    private:
        Slot* at_;
    };

public:
    using iterator = basic_iterator<slot, T>;
    using const_iterator = basic_iterator<const slot, const T>;

    constexpr static_vector() {}
    constexpr static_vector(const static_vector& other) : size_(other.size_) {
        for (std::size_t i = 0; i < size_; ++i) std::construct_at(&items_[i].value, other.items_[i].value);
    }
    constexpr static_vector& operator=(const static_vector& other) {
        size_ = other.size_;
        for (std::size_t i = 0; i < size_; ++i) std::construct_at(&items_[i].value, other.items_[i].value);
        return *this;
    }

    constexpr void push_back(const T& value) {
        if (size_ == Capacity) throw error("anatomy: a fixed-capacity list is full; the model has more ops per stage than the library supports");
        std::construct_at(&items_[size_++].value, value);
    }
    constexpr std::size_t size() const { return size_; }
    constexpr bool empty() const { return size_ == 0; }
    constexpr const_iterator begin() const { return const_iterator(items_); }
    constexpr const_iterator end() const { return const_iterator(items_ + size_); }
    constexpr iterator begin() { return iterator(items_); }
    constexpr iterator end() { return iterator(items_ + size_); }
    constexpr const T& operator[](std::size_t i) const { return items_[i].value; }
    constexpr T& operator[](std::size_t i) { return items_[i].value; }
    constexpr T& back() { return items_[size_ - 1].value; }

private:
    slot items_[Capacity];
    std::size_t size_ = 0;
};

}  // namespace anatomy::detail
