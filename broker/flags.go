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
	kind  string
	v     string
	check func(string) error
}

func (f *flagValue) String() string { return f.v }
func (f *flagValue) Type() string   { return f.kind }

func (f *flagValue) Set(s string) error {
	if err := f.check(s); err != nil {
		return err
	}
	f.v = s
	return nil
}

// AddFlags defines one flag per key on fs, named as the key
// (--log.dir=/x), with the key's help text and default value: the
// broker's keys (Keys), then those of each binding in extra (kafka-server
// binds the replication layer's, replica.Keys), in their order. LoadConfig
// must be given the same bindings.
func AddFlags(fs *pflag.FlagSet, extra ...props.Binding) {
	def := DefaultConfig()
	for i := range Keys.Keys() {
		k := &Keys.Keys()[i]
		addFlag(fs, k.Name(), k.Kind(), k.Help(), k.Show(&def), func(s string) error {
			scratch := DefaultConfig()
			return scratch.Set(k.Name(), s)
		})
	}
	for _, b := range extra {
		for _, name := range b.Names() {
			kind, help, _ := b.Doc(name)
			addFlag(fs, name, kind, help, b.Show(name), func(s string) error { return b.Check(name, s) })
		}
	}
}

func addFlag(fs *pflag.FlagSet, name, kind, help, def string, check func(string) error) {
	f := fs.VarPF(&flagValue{kind: kind, v: def, check: check}, name, "", help)
	if kind == "bool" {
		f.NoOptDefVal = "true"
	}
}

// setKey sets the named key in cfg or, when it is not the broker's, in the
// binding of extra that has it; ok is false when no table has it.
func setKey(cfg *Config, extra []props.Binding, name, value string) (ok bool, err error) {
	if Keys.Lookup(name) != nil {
		return true, cfg.Set(name, value)
	}
	for _, b := range extra {
		if _, _, has := b.Doc(name); has {
			return true, b.Set(name, value)
		}
	}
	return false, nil
}

// LoadConfig builds a Config from DefaultConfig, then the properties file at
// path (skipped when path is empty), then the flags of fs defined by
// AddFlags that were set on the command line, so flags win. Keys of the
// bindings in extra are set in their configs, in the same order. Keys in the file
// that the broker does not know are reported to logger and ignored, as
// Kafka 0.7 ignores them. The result's Logger is logger. The Config is not
// validated; Broker.New does that.
//
// As in Kafka 0.7, log.default.flush.interval.ms follows
// log.default.flush.scheduler.interval.ms when only the latter is given.
func LoadConfig(path string, fs *pflag.FlagSet, logger *slog.Logger, extra ...props.Binding) (Config, error) {
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
			known, err := setKey(&cfg, extra, p.Key, p.Value)
			if !known {
				logger.Warn("ignoring unknown configuration key", "file", path, "line", p.Line, "key", p.Key)
				continue
			}
			if err != nil {
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
			if _, err := setKey(&cfg, extra, f.Name, f.Value.String()); err != nil {
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
