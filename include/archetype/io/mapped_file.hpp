#pragma once
// A read-only memory mapping of a whole file (POSIX mmap, MAP_PRIVATE).
// Model files are mapped, never read into buffers: the page cache holds the
// weights once, load time does not depend on file size, and RSS grows only with
// the pages actually touched.
// Caveat: if another process truncates the file while it is mapped, touching the
// lost pages raises SIGBUS; no user-space reader can prevent that.
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <utility>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "archetype/core/error.hpp"

namespace archetype::io {

class mapped_file {
public:
    mapped_file() = default;

    /// Maps `path` read-only. io_error (naming the path and the OS reason) when it
    /// cannot be opened, is not a regular file, or mmap fails. An empty file gives
    /// an empty mapping (mmap refuses length 0).
    explicit mapped_file(const std::string& path) : path_(path) {
        const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0) throw io_error("cannot open '" + path + "': " + std::strerror(errno));
        struct ::stat st {};
        if (::fstat(fd, &st) != 0) {
            const int e = errno;
            ::close(fd);
            throw io_error("cannot stat '" + path + "': " + std::strerror(e));
        }
        if (!S_ISREG(st.st_mode)) {
            ::close(fd);
            throw io_error("'" + path + "' is not a regular file");
        }
        size_ = static_cast<std::size_t>(st.st_size);
        if (size_ > 0) {
            void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
            if (p == MAP_FAILED) {
                const int e = errno;
                ::close(fd);
                throw io_error("cannot map '" + path + "' (" + std::to_string(size_) +
                               " bytes): " + std::strerror(e));
            }
            data_ = static_cast<const std::byte*>(p);
        }
        ::close(fd); // the mapping keeps its own reference to the file
    }

    mapped_file(const mapped_file&) = delete;
    mapped_file& operator=(const mapped_file&) = delete;
    mapped_file(mapped_file&& o) noexcept
        : path_(std::move(o.path_)), data_(std::exchange(o.data_, nullptr)),
          size_(std::exchange(o.size_, 0)) {}
    mapped_file& operator=(mapped_file&& o) noexcept {
        if (this != &o) {
            unmap();
            path_ = std::move(o.path_);
            data_ = std::exchange(o.data_, nullptr);
            size_ = std::exchange(o.size_, 0);
        }
        return *this;
    }
    ~mapped_file() { unmap(); }

    std::span<const std::byte> bytes() const noexcept { return {data_, size_}; }
    const std::byte* data() const noexcept { return data_; }
    std::size_t size() const noexcept { return size_; }
    const std::string& path() const noexcept { return path_; }

    /// Drops this process's pages wholly inside [p, p + n) (a range of the mapping)
    /// from its resident set: a loader that copied a tensor out (a repacked layout)
    /// keeps one copy resident, not two. The bytes stay readable: a later access
    /// maps them again from the file (MAP_PRIVATE pages here are never written).
    void release(const void* p, std::size_t n) const noexcept {
        const auto a = reinterpret_cast<std::uintptr_t>(p), lo = reinterpret_cast<std::uintptr_t>(data_);
        if (!data_ || a < lo || a + n > lo + size_) return;
        const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
        const std::uintptr_t b = (a + page - 1) / page * page, e = (a + n) / page * page;
        if (b < e) ::madvise(reinterpret_cast<void*>(b), e - b, MADV_DONTNEED);
    }

private:
    void unmap() noexcept {
        if (data_) ::munmap(const_cast<std::byte*>(data_), size_);
        data_ = nullptr;
        size_ = 0;
    }
    std::string path_;
    const std::byte* data_ = nullptr;
    std::size_t size_ = 0;
};

} // namespace archetype::io
