// pto_dump.cpp - pto-dump: prints the pipeline stages of the kernels a program traces, without
// setting environment variables by hand. It runs `PROGRAM ARGS...` with PTO_DUMP=STAGES and
// PTO_DUMP_DIR set to a fresh temporary directory (README.md, "Environment", says what each stage
// holds), waits for it, then prints every dump file it wrote, kernel by kernel in name order and,
// within a kernel, in pipeline order (sharding, ir, tiles, plan, llvm, asm), each under a header
// line
//   ==== KERNEL [HASH] STAGE (FILE)
// KERNEL is the kernel name (the file name's %XX escapes decoded; a name whose escaped form is
// longer than 128 bytes is cut there), HASH tells its specializations
// apart. --kernel keeps some kernels (matched as written to pto::jit, long names by their cut
// form), --list prints only the headers, --keep DIR keeps the files (in DIR) instead of a
// temporary directory; files DIR already held that the run did not write are not printed. The
// program's own output passes through unchanged (stdout and stderr); the dumps follow it on stdout.
// Exit status: the program's when it fails (128 + N when signal N killed it), else 0 with at
// least one dump printed, 1 with none (no kernel traced, or none matched --kernel), 2 for a bad
// flag (or a --keep DIR that cannot be created or written; checked before the program runs), 127
// when the program cannot be started. Asked for llvm or asm, a program whose kernels all ran in
// the interpreter gets a note on stderr that those stages do not exist there.
#include "pto/file_name.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <iostream>
#include <iterator>
#include <map>
#include <sstream>
#include <string>
#include <string_view>
#include <sys/wait.h>
#include <tuple>
#include <unistd.h>
#include <vector>

namespace fs = std::filesystem;

namespace {

struct Stage {
  const char *name; // PTO_DUMP's word
  const char *ext;  // the file's extension (codegen/passes/stage_dump.cpp writes them)
};
// Pipeline order.
constexpr std::array<Stage, 6> kStages{{{"sharding", ".sharding"},
                                        {"ir", ".ir"},
                                        {"tiles", ".tiles"},
                                        {"plan", ".plan"},
                                        {"llvm", ".ll"},
                                        {"asm", ".s"}}};

// "a%2Fb" -> "a/b": the inverse of the dump file names' escaping (bytes outside [A-Za-z0-9_-]).
std::string unescape(const std::string &s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && std::isxdigit(static_cast<unsigned char>(s[i + 1])) &&
        std::isxdigit(static_cast<unsigned char>(s[i + 2]))) {
      out += static_cast<char>(std::stoi(s.substr(i + 1, 2), nullptr, 16));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

struct Dump {
  std::string kernel; // decoded
  std::string stem;   // as in the file name (escaped, maybe cut)
  std::string hash;
  size_t stage = 0; // index into kStages
  fs::path path;
};

// The dump files in dir: NAME.HASH.EXT with a known EXT.
std::vector<Dump> collect(const fs::path &dir) {
  std::vector<Dump> out;
  std::error_code ec;
  for (const auto &entry : fs::directory_iterator(dir, ec)) {
    const std::string file = entry.path().filename().string();
    for (size_t s = 0; s < kStages.size(); ++s) {
      const std::string ext = kStages[s].ext;
      if (file.size() <= ext.size() || file.compare(file.size() - ext.size(), ext.size(), ext) != 0)
        continue;
      const std::string stem = file.substr(0, file.size() - ext.size());
      const size_t dot = stem.rfind('.');
      if (dot == std::string::npos)
        continue;
      const std::string name = stem.substr(0, dot);
      out.push_back({unescape(name), name, stem.substr(dot + 1), s, entry.path()});
    }
  }
  std::sort(out.begin(), out.end(), [](const Dump &a, const Dump &b) {
    return std::tie(a.kernel, a.hash, a.stage) < std::tie(b.kernel, b.hash, b.stage);
  });
  return out;
}

// Whether the comma-separated LIST names one of `words`.
bool asks_any(const std::string &list, std::initializer_list<std::string_view> words) {
  std::stringstream in(list);
  std::string word;
  while (std::getline(in, word, ','))
    if (std::find(words.begin(), words.end(), word) != words.end())
      return true;
  return false;
}

// What a file looked like before the run: a file the run did not touch is not its dump.
struct Seen {
  fs::file_time_type mtime;
  uintmax_t size;
};
std::map<fs::path, Seen> snapshot(const fs::path &dir) {
  std::map<fs::path, Seen> out;
  std::error_code ec;
  for (const auto &entry : fs::directory_iterator(dir, ec)) {
    std::error_code e1, e2;
    const auto t = entry.last_write_time(e1);
    const auto n = entry.file_size(e2);
    if (!e1 && !e2)
      out[entry.path()] = {t, n};
  }
  return out;
}

// Runs argv with PTO_DUMP / PTO_DUMP_DIR set; returns its exit status as a shell reports it.
int run(const std::vector<std::string> &argv, const std::string &stages, const fs::path &dir) {
  std::cout.flush();
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid < 0) {
    std::fprintf(stderr, "pto-dump: fork failed: %s\n", std::strerror(errno));
    return 127;
  }
  if (pid == 0) {
    setenv("PTO_DUMP", stages.c_str(), 1);
    setenv("PTO_DUMP_DIR", dir.c_str(), 1);
    std::vector<char *> args;
    for (const auto &a : argv)
      args.push_back(const_cast<char *>(a.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    std::fprintf(stderr, "pto-dump: cannot run '%s': %s\n", args[0], std::strerror(errno));
    _exit(127);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status))
    return WEXITSTATUS(status);
  if (WIFSIGNALED(status))
    return 128 + WTERMSIG(status);
  return 1;
}

// Creates dir (and its parents) if missing and checks that a file can be written in it: "" when
// it can, else why not (the system's reason).
std::string usable_dir(const fs::path &dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    return "cannot create the directory: " + ec.message();
  if (!fs::is_directory(dir, ec))
    return "not a directory";
  std::string probe = (dir / ".pto-dump-probe.XXXXXX").string();
  const int fd = mkstemp(probe.data());
  if (fd < 0)
    return std::string("cannot write in the directory: ") + std::strerror(errno);
  close(fd);
  fs::remove(probe, ec);
  return "";
}

} // namespace

int main(int argc, char **argv) {
  CLI::App app{
      "pto-dump: run a program that uses ptojit and print the pipeline stages of every "
      "kernel it traces (PTO_DUMP and PTO_DUMP_DIR are set for it; README.md, "
      "\"Environment\", says what each stage holds).\n"
      "Example: pto-dump --stages plan --kernel softmax -- build/samples/allreduce_softmax "
      "--pes 2",
      "pto-dump"};
  std::string stages = "ir,tiles,plan";
  std::vector<std::string> kernels;
  std::string keep;
  bool list = false;
  std::vector<std::string> command;
  app.add_option("--stages", stages,
                 "comma-separated stages to print, in any order: sharding (pto::parallel's "
                 "layouts and inserted collectives), ir (the verified program), tiles (each op's "
                 "tile grid), plan (the fusion plan), llvm (the optimized LLVM module), asm (the "
                 "machine code), or all; sharding exists only for kernels that use pto::parallel, "
                 "llvm and asm only for JIT-compiled kernels")
      ->default_val(stages)
      ->check(CLI::Validator(
          [](std::string &s) -> std::string {
            std::stringstream in(s);
            std::string word;
            bool any = false;
            while (std::getline(in, word, ',')) {
              any = true;
              if (word == "all")
                continue;
              if (std::none_of(kStages.begin(), kStages.end(),
                               [&](const Stage &st) { return word == st.name; }))
                return "unknown stage '" + word + "' (sharding, ir, tiles, plan, llvm, asm, all)";
            }
            return any ? "" : "no stage given (sharding, ir, tiles, plan, llvm, asm, all)";
          },
          "LIST"));
  app.add_option("--kernel", kernels,
                 "print only the kernels of this name (as passed to pto::jit; a name longer "
                 "than the 128 bytes a dump file name holds matches by its first bytes); "
                 "repeatable; default: every kernel");
  app.add_flag("--list", list, "print only each dump's header line, not its text");
  app.add_option("--keep", keep,
                 "write the dump files into DIR (created with its parents if missing) and keep "
                 "them; only the files this run wrote are printed; a DIR that cannot be created "
                 "or written is exit 2; default: a temporary directory, removed at exit")
      ->type_name("DIR")
      ->check(CLI::Validator(
          [](std::string &s) -> std::string { return s.empty() ? "DIR is empty" : ""; }, "DIR"));
  app.add_option("command", command, "the program to run and its arguments (after --)")->required();
  app.positionals_at_end();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }

  fs::path dir;
  std::error_code ec;
  if (!keep.empty()) {
    dir = fs::absolute(keep, ec);
    if (std::string why = usable_dir(dir); !why.empty()) {
      std::fprintf(stderr, "pto-dump: --keep %s: %s\n", keep.c_str(), why.c_str());
      return 2;
    }
  } else {
    std::string tmpl = (fs::temp_directory_path() / "pto-dump.XXXXXX").string();
    if (mkdtemp(tmpl.data()) == nullptr) {
      std::fprintf(stderr, "pto-dump: cannot create a temporary directory: %s\n",
                   std::strerror(errno));
      return 2;
    }
    dir = tmpl;
  }
  const std::map<fs::path, Seen> before = snapshot(dir);
  const int rc = run(command, stages, dir);
  std::vector<std::string> wanted; // the --kernel names as the dump files spell them
  for (const auto &k : kernels)
    wanted.push_back(pto::escape_file_name(k));
  int printed = 0;
  bool any_jit_stage = false;
  for (const Dump &d : collect(dir)) {
    if (!wanted.empty() && std::find(wanted.begin(), wanted.end(), d.stem) == wanted.end())
      continue;
    if (auto it = before.find(d.path); it != before.end()) {
      std::error_code e1, e2;
      const auto t = fs::last_write_time(d.path, e1);
      const auto n = fs::file_size(d.path, e2);
      if (!e1 && !e2 && t == it->second.mtime && n == it->second.size)
        continue; // left from an earlier run in --keep's DIR
    }
    ++printed;
    any_jit_stage |= d.stage >= 3;
    std::cout << "==== " << d.kernel << " [" << d.hash << "] " << kStages[d.stage].name << " ("
              << d.path.filename().string() << ")\n";
    if (!list) {
      std::ifstream f(d.path, std::ios::binary);
      std::cout << std::string(std::istreambuf_iterator<char>(f), {}) << "\n";
    }
  }
  std::cout.flush();
  if (keep.empty())
    fs::remove_all(dir, ec);
  if (rc != 0) {
    std::fprintf(stderr, "pto-dump: '%s' exited with status %d\n", command[0].c_str(), rc);
    return rc;
  }
  const bool jit_asked = asks_any(stages, {"llvm", "asm", "all"});
  if (printed > 0 && jit_asked && !any_jit_stage)
    std::fprintf(stderr, "pto-dump: no llvm or asm stage was written: the kernels ran in the "
                         "interpreter (PTO_RUN_MODE=interpret or the program's --interpret), "
                         "which compiles no code\n");
  if (printed == 0) {
    std::fprintf(stderr, "pto-dump: no dump %s\n",
                 !kernels.empty() ? "matched --kernel"
                 : asks_any(stages, {"ir", "tiles", "plan", "all"})
                     ? "was written (did the program trace a kernel?)"
                     : "of the stages asked for was written (sharding exists only for kernels "
                       "that use pto::parallel; llvm and asm only for JIT-compiled kernels)");
    return 1;
  }
  return 0;
}
