package broker

import (
	"fmt"
	"log/slog"
	"os"

	"github.com/netdb11/kafka/broker/props"
	"github.com/spf13/pflag"
)

// flagValue is a pflag.Value for one key. It checks a value when the flag is
// parsed, so a bad flag is refused with the key's own message, and keeps the
// text for LoadConfig to apply after the properties file.
type flagValue struct {
	k *props.Key[Config]
	v string
}

func (f *flagValue) String() string { return f.v }
func (f *flagValue) Type() string   { return f.k.Kind() }

func (f *flagValue) Set(s string) error {
	scratch := DefaultConfig()
	if err := scratch.Set(f.k.Name(), s); err != nil {
		return err
	}
	f.v = s
	return nil
}

// AddFlags defines one flag per key on fs, named as the key
// (--log.dir=/x), with the key's help text and default value.
func AddFlags(fs *pflag.FlagSet) {
	def := DefaultConfig()
	for i := range Keys.Keys() {
		k := &Keys.Keys()[i]
		f := fs.VarPF(&flagValue{k: k, v: k.Show(&def)}, k.Name(), "", k.Help())
		if k.Kind() == "bool" {
			f.NoOptDefVal = "true"
		}
	}
}

// LoadConfig builds a Config from DefaultConfig, then the properties file at
// path (skipped when path is empty), then the flags of fs defined by
// AddFlags that were set on the command line, so flags win. Keys in the file
// that the broker does not know are reported to logger and ignored, as
// Kafka 0.7 ignores them. The result's Logger is logger. The Config is not
// validated; Broker.New does that.
//
// As in Kafka 0.7, log.default.flush.interval.ms follows
// log.default.flush.scheduler.interval.ms when only the latter is given.
func LoadConfig(path string, fs *pflag.FlagSet, logger *slog.Logger) (Config, error) {
	if logger == nil {
		logger = slog.Default()
	}
	cfg := DefaultConfig()
	cfg.Logger = logger
	given := make(map[string]bool)
	if path != "" {
		f, err := os.Open(path)
		if err != nil {
			return cfg, fmt.Errorf("broker: reading properties: %w", err)
		}
		entries, err := props.Parse(f)
		if cerr := f.Close(); err == nil && cerr != nil {
			err = cerr
		}
		if err != nil {
			return cfg, fmt.Errorf("broker: %s: %w", path, err)
		}
		for _, p := range entries {
			if Keys.Lookup(p.Key) == nil {
				logger.Warn("ignoring unknown configuration key", "file", path, "line", p.Line, "key", p.Key)
				continue
			}
			if err := cfg.Set(p.Key, p.Value); err != nil {
				return cfg, fmt.Errorf("%s:%d: %w", path, p.Line, err)
			}
			given[p.Key] = true
		}
	}
	var flagErr error
	if fs != nil {
		fs.Visit(func(f *pflag.Flag) {
			if _, ok := f.Value.(*flagValue); !ok || flagErr != nil {
				return
			}
			if err := cfg.Set(f.Name, f.Value.String()); err != nil {
				flagErr = fmt.Errorf("--%s: %w", f.Name, err)
			}
			given[f.Name] = true
		})
	}
	if flagErr != nil {
		return cfg, flagErr
	}
	if given["log.default.flush.scheduler.interval.ms"] && !given["log.default.flush.interval.ms"] {
		cfg.Log.FlushIntervalTime = cfg.Log.FlushSchedulerInterval
	}
	return cfg, nil
}
