// ir/chunked_vector.h — an append-only sequence whose elements never move.
#pragma once

#include <cstddef>
#include <iterator>
#include <memory>
#include <new>
#include <utility>
#include <vector>

namespace ferry {

/// Elements live in fixed-size chunks: appending never moves or copies what is there, so
/// references to elements stay valid while a pass adds nodes, and a graph of a million values
/// grows without reallocating (and page-faulting in) a second copy of itself. Indexing is a
/// shift, a mask and one indirection.
template <class T, size_t kChunkBits = 10> class ChunkedVector {
  static constexpr size_t kChunk = size_t{1} << kChunkBits;

 public:
  ChunkedVector() = default;
  ChunkedVector(const ChunkedVector &other) {
    try {
      for (size_t i = 0; i < other.size_; ++i) emplace_back(other[i]);
    } catch (...) {
      clear();  // the destructor does not run for a half-built object
      throw;
    }
  }
  ChunkedVector(ChunkedVector &&other) noexcept
      : chunks_(std::move(other.chunks_)), size_(std::exchange(other.size_, 0)) {}
  ChunkedVector &operator=(ChunkedVector other) noexcept {
    swap(other);
    return *this;
  }
  ~ChunkedVector() { clear(); }

  void swap(ChunkedVector &other) noexcept {
    chunks_.swap(other.chunks_);
    std::swap(size_, other.size_);
  }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

  T &operator[](size_t i) { return chunks_[i >> kChunkBits].get()[i & (kChunk - 1)]; }
  const T &operator[](size_t i) const { return chunks_[i >> kChunkBits].get()[i & (kChunk - 1)]; }

  /// Iterates in index order (a forward iterator over the elements).
  template <class Owner, class Elem> class Iter {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = T;
    using difference_type = std::ptrdiff_t;
    using pointer = Elem *;
    using reference = Elem &;
    Iter() = default;
    Iter(Owner *owner, size_t i) : owner_(owner), i_(i) {}
    Elem &operator*() const { return (*owner_)[i_]; }
    Elem *operator->() const { return &(*owner_)[i_]; }
    Iter &operator++() {
      ++i_;
      return *this;
    }
    Iter operator++(int) {
      Iter old = *this;
      ++i_;
      return old;
    }
    bool operator==(const Iter &o) const { return i_ == o.i_; }

   private:
    Owner *owner_ = nullptr;
    size_t i_ = 0;
  };
  using iterator = Iter<ChunkedVector, T>;
  using const_iterator = Iter<const ChunkedVector, const T>;
  iterator begin() { return {this, 0}; }
  iterator end() { return {this, size_}; }
  const_iterator begin() const { return {this, 0}; }
  const_iterator end() const { return {this, size_}; }

  T &back() { return (*this)[size_ - 1]; }
  const T &back() const { return (*this)[size_ - 1]; }

  /// Destroys the elements from index `n` on (their chunks stay for reuse).
  void truncate(size_t n) {
    while (size_ > n) (*this)[--size_].~T();
  }

  template <class... Args> T &emplace_back(Args &&...args) {
    if (size_ == chunks_.size() * kChunk) chunks_.emplace_back(allocateChunk());
    T *slot = chunks_[size_ >> kChunkBits].get() + (size_ & (kChunk - 1));
    ::new (static_cast<void *>(slot)) T(std::forward<Args>(args)...);
    ++size_;
    return *slot;
  }
  void push_back(T value) { emplace_back(std::move(value)); }

  void clear() {
    truncate(0);
    chunks_.clear();
  }

 private:
  struct FreeChunk {
    void operator()(T *p) const { std::allocator<T>().deallocate(p, kChunk); }
  };
  using Chunk = std::unique_ptr<T, FreeChunk>;  // raw storage: elements are built in place

  static Chunk allocateChunk() { return Chunk(std::allocator<T>().allocate(kChunk)); }

  std::vector<Chunk> chunks_;
  size_t size_ = 0;
};

}  // namespace ferry
