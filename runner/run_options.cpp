#include "run_options.h"

#include <cstdlib>
#include <stdexcept>

#include "launch.h"

namespace lazyscope::runner {

const char* const kRunHelp = R"(usage: lazyscope run SCRIPT [OPTIONS] [-- ARGS...]
       lazyscope run [OPTIONS] SCRIPT [ARGS...]

Runs a Python training script with LazyScope's engine and records the run
(its steps, compiles, fallbacks, logged scalars, output) into a history.
ARGS reach the script as sys.argv[1:]. The options below are lazyscope's
wherever they stand before "--"; every other word is the script's.

options:
  --history FILE        the history to record into (default: $LAZYSCOPE_HISTORY,
                        else ~/.local/share/lazyscope/history.sqlite)
  --name NAME           the run's name (default: the script's file name)
  --tag TAG             tag the run; repeat for several tags
  --device cpu|lazy     what the script's default device is: sets
                        LAZYSCOPE_DEFAULT_DEVICE, which lazyscope's helpers and the
                        example scripts read ("cpu" runs eagerly, "lazy" traces graphs)
  --devices N           number of lazy devices, lazy:0 .. lazy:N-1 (LAZYSCOPE_DEVICE_COUNT)
  --bf16                run float32 math in bfloat16 (LAZYSCOPE_USE_BF16=1)
  --force-fallback OPS  run these ops on the host, comma-separated, e.g. nonzero,sort
                        (LAZYSCOPE_FORCE_FALLBACK), to measure what a fallback costs
  --quiet               no progress line
  --progress-every S    when stderr is not a terminal, print a progress line every
                        S seconds (default 10); on a terminal the line is redrawn in place
  -h, --help            this text

The settings above are recorded with the run (`lazyscope show RUN --json`).
An option of the script that lazyscope also has goes after "--":
  lazyscope run train.py --tag baseline -- --name my-model
The exit code is the script's (130 after Ctrl-C, 143 after SIGTERM).
)";

namespace {

constexpr const char* kDefaultDevice = "LAZYSCOPE_DEFAULT_DEVICE";
constexpr const char* kDeviceCount = "LAZYSCOPE_DEVICE_COUNT";
constexpr const char* kUseBf16 = "LAZYSCOPE_USE_BF16";
constexpr const char* kForceFallback = "LAZYSCOPE_FORCE_FALLBACK";

// Every environment variable the engine reads at start-up; a run records
// those in effect whether an option or the caller's environment set them.
constexpr const char* kEngineVariables[] = {
    kDefaultDevice,
    kDeviceCount,
    kUseBf16,
    kForceFallback,
    "LAZYSCOPE_COMPILE_CACHE_SIZE",
    "LAZYSCOPE_GRAPH_NODE_LIMIT",
    "LAZYSCOPE_METRIC_SNAPSHOT_MS",
};

std::vector<std::string> split_ops(const std::string& text) {
  std::vector<std::string> ops;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    std::string op = text.substr(start, comma - start);
    if (op.empty() || op.find_first_of(" \t") != std::string::npos) {
      throw std::invalid_argument(std::string("--force-fallback needs op names separated by commas, got '") + text +
                                  "'");
    }
    ops.push_back(std::move(op));
    start = comma + 1;
  }
  return ops;
}

std::string join(const std::vector<std::string>& words) {
  std::string text;
  for (const auto& word : words) {
    if (!text.empty()) text += ',';
    text += word;
  }
  return text;
}

// Handles one of our options at args[i] (advancing i past its value);
// false when args[i] is not one of ours.
bool take_option(const std::vector<std::string>& args, size_t& i, RunOptions& o) {
  const std::string& a = args[i];
  auto value = [&]() -> std::string {
    if (i + 1 >= args.size()) throw std::invalid_argument(a + " needs a value");
    return args[++i];
  };
  // An empty name or tag could not be typed back to find the run.
  auto visible = [&](std::string text) {
    if (text.find_first_not_of(" \t\r\n") == std::string::npos) {
      throw std::invalid_argument(a + " needs a value with a visible character, got '" + text + "'");
    }
    return text;
  };
  if (a == "--history") {
    o.history_path = visible(value());
  } else if (a == "--name") {
    o.name = visible(value());
  } else if (a == "--tag") {
    o.tags.push_back(visible(value()));
  } else if (a == "--device") {
    o.device = value();
    if (o.device != "cpu" && o.device != "lazy") {
      throw std::invalid_argument(std::string("--device is cpu or lazy, got '") + o.device + "'");
    }
  } else if (a == "--devices") {
    const std::string v = value();
    size_t used = 0;
    try {
      o.device_count = std::stoi(v, &used);
    } catch (const std::exception&) {
      o.device_count = 0;
    }
    if (o.device_count < 1 || used != v.size()) {
      throw std::invalid_argument(std::string("--devices needs a positive number, got '") + v + "'");
    }
  } else if (a == "--bf16") {
    o.bf16 = true;
  } else if (a == "--force-fallback") {
    for (auto& op : split_ops(value())) o.force_fallback.push_back(std::move(op));
  } else if (a == "--quiet" || a == "-q") {
    o.quiet = true;
  } else if (a == "--progress-every") {
    const std::string v = value();
    size_t used = 0;
    try {
      o.progress_every_s = std::stod(v, &used);
    } catch (const std::exception&) {
      o.progress_every_s = 0;
    }
    if (!(o.progress_every_s > 0) || used != v.size()) {
      throw std::invalid_argument(std::string("--progress-every needs a number of seconds above 0, got '") + v + "'");
    }
  } else if (a == "--help" || a == "-h") {
    o.help = true;
  } else if (take_launch_option(args, i, o)) {
  } else {
    return false;
  }
  return true;
}

}  // namespace

RunOptions parse_run_options(const std::vector<std::string>& args) {
  RunOptions o;
  size_t i = 0;
  for (; i < args.size(); ++i) {
    if (take_option(args, i, o)) continue;
    const std::string& a = args[i];
    if (a == "--") {
      ++i;
      break;
    }
    if (a.starts_with("-") && a.size() > 1) {
      throw std::invalid_argument(std::string("unknown option ") + a + " (lazyscope run --help lists them)");
    }
    break;
  }
  if (o.help) return o;
  if (i >= args.size()) throw std::invalid_argument("missing the script to run (lazyscope run --help)");
  o.script = args[i++];
  // After the script, our options count wherever they stand before "--"
  // (issue 15: stopping at the script's first word silently turned a later
  // --history into a script argument and recorded into the default history).
  // Every other word is the script's, in order; all after "--" are the script's.
  for (; i < args.size(); ++i) {
    if (args[i] == "--") {
      ++i;
      break;
    }
    if (!take_option(args, i, o)) o.script_args.push_back(args[i]);
  }
  if (o.help) return o;
  o.script_args.insert(o.script_args.end(), args.begin() + static_cast<long>(i), args.end());
  return o;
}

std::map<std::string, std::string> engine_settings(const RunOptions& o) {
  std::map<std::string, std::string> settings;
  for (const char* name : kEngineVariables) {
    if (const char* value = std::getenv(name); value != nullptr && *value != '\0') settings[name] = value;
  }
  if (!o.device.empty()) settings[kDefaultDevice] = o.device;
  if (o.device_count > 0) settings[kDeviceCount] = std::to_string(o.device_count);
  if (o.bf16) settings.insert_or_assign(kUseBf16, std::string(1, '1'));  // not = "1": a false -Wrestrict at -O3
  if (!o.force_fallback.empty()) settings[kForceFallback] = join(o.force_fallback);
  return settings;
}

void apply_engine_settings(const std::map<std::string, std::string>& settings) {
  for (const auto& [name, value] : settings) {
    if (::setenv(name.c_str(), value.c_str(), 1) != 0) {
      throw std::runtime_error(std::string("cannot set ") + name + " in the environment");
    }
  }
}

}  // namespace lazyscope::runner
