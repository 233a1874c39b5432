package workflow

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// MinScheduleInterval is the shortest interval a schedule may have, so a
// typo like "1ms" cannot turn an agent into a busy loop.
const MinScheduleInterval = time.Second

// Schedule is an agent's parsed schedule. The workflow loader, `new`,
// `schedule set` and the scheduler that fires it all get it from
// ParseSchedule, so what is accepted is exactly what fires. The zero
// Schedule is not usable.
type Schedule struct {
	every time.Duration // an interval; zero for a calendar schedule
	cron  cron.Schedule
}

// Next returns when the schedule fires after last, the agent's last
// activity or last scheduled wake-up. An interval fires that long after
// last; a cron expression or a descriptor at its next match after last,
// in the daemon's local time.
func (s Schedule) Next(last time.Time) time.Time {
	if s.every > 0 {
		return last.Add(s.every)
	}
	return s.cron.Next(last.Local())
}

// scheduleForms is what every schedule error ends with, so the user sees
// every accepted form at once.
const scheduleForms = `use an interval (30s, 5m, 2h, or "@every 5m"), a 5-field cron ` +
	`(minute hour day-of-month month day-of-week, e.g. "*/15 9-17 * * MON-FRI") ` +
	`or one of @hourly, @daily, @midnight, @weekly, @monthly, @yearly`

// ParseSchedule is the one parser of agent schedules. It accepts an
// interval of at least MinScheduleInterval ("30s", "5m", "@every 2h"), a
// 5-field cron expression and robfig/cron's descriptors (@hourly, @daily,
// ...). Day-of-week 7 means Sunday, as in standard cron: it is rewritten
// to 0 before robfig/cron, which only knows 0-6, parses the expression.
// Errors start with the quoted schedule, so callers prefix what it is
// ("schedule", "wakeup", a file:line).
func ParseSchedule(s string) (Schedule, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return Schedule{}, fmt.Errorf(`"" is empty: %s`, scheduleForms)
	}
	if every, ok := strings.CutPrefix(s, "@every "); ok {
		return parseInterval(s, strings.TrimSpace(every))
	}
	if d, err := time.ParseDuration(s); err == nil {
		return checkInterval(s, d)
	}
	if strings.HasPrefix(s, "TZ=") || strings.HasPrefix(s, "CRON_TZ=") {
		return Schedule{}, fmt.Errorf("%q names a time zone: schedules run in the daemon's local time, drop the %s prefix", s, s[:strings.Index(s, "=")+1])
	}
	if strings.HasPrefix(s, "@") {
		sched, err := cron.ParseStandard(s)
		if err != nil {
			return Schedule{}, fmt.Errorf("%q is not a known descriptor: %s", s, scheduleForms)
		}
		return Schedule{cron: sched}, nil
	}
	fields := strings.Fields(s)
	if len(fields) == 1 {
		return Schedule{}, fmt.Errorf("%q is neither an interval nor a cron expression: %s", s, scheduleForms)
	}
	if len(fields) != 5 {
		return Schedule{}, fmt.Errorf("%q has %d fields, a cron expression has 5: %s", s, len(fields), scheduleForms)
	}
	fields[4] = sundayAsZero(fields[4])
	sched, err := cron.ParseStandard(strings.Join(fields, " "))
	if err != nil {
		return Schedule{}, fieldError(s, fields)
	}
	return Schedule{cron: sched}, nil
}

func parseInterval(s, every string) (Schedule, error) {
	d, err := time.ParseDuration(every)
	if err != nil {
		return Schedule{}, fmt.Errorf("%q: %q is not a duration: use e.g. @every 30s, @every 5m, @every 2h", s, every)
	}
	return checkInterval(s, d)
}

func checkInterval(s string, d time.Duration) (Schedule, error) {
	if d < MinScheduleInterval {
		return Schedule{}, fmt.Errorf("%q is shorter than %s: use at least %s", s, MinScheduleInterval, MinScheduleInterval)
	}
	return Schedule{every: d}, nil
}

// cronFieldHints name each field and what it takes, for errors.
var cronFieldHints = [5]struct{ name, values string }{
	{"minute", "numbers 0-59"},
	{"hour", "numbers 0-23"},
	{"day-of-month", "numbers 1-31"},
	{"month", "numbers 1-12 or names JAN-DEC"},
	{"day-of-week", "numbers 0-7 (0 and 7 are Sunday) or names SUN-SAT"},
}

// fieldError says which field of a cron expression robfig/cron refused, by
// parsing each field alone with the others left at *.
func fieldError(s string, fields []string) error {
	for i, f := range fields {
		alone := []string{"*", "*", "*", "*", "*"}
		alone[i] = f
		if _, err := cron.ParseStandard(strings.Join(alone, " ")); err != nil {
			h := cronFieldHints[i]
			return fmt.Errorf("%q: %s field %q %s: use *, %s, ranges (a-b), lists (a,b) and steps (/n)",
				s, h.name, strings.Fields(s)[i], cronReason(err), h.values)
		}
	}
	return fmt.Errorf("%q is not a valid cron expression: %s", s, scheduleForms)
}

// cronReason puts robfig/cron's complaint about one field in the user's
// words.
func cronReason(err error) string {
	msg := err.Error()
	switch {
	case strings.Contains(msg, "beyond end of range"):
		return "runs backwards: write the smaller value first"
	case strings.Contains(msg, "above maximum"), strings.Contains(msg, "below minimum"):
		return "is out of range"
	case strings.Contains(msg, "step of range"):
		return "has a step that is not a whole number above 0"
	}
	return "is not valid"
}

// sundayAsZero rewrites a day-of-week field so that 7 (Sunday in standard
// cron) reads as 0: "7" becomes "0", and a range or step that reaches 7
// ("5-7", "1-7/2") becomes the list of days it stands for. Anything else
// is left for robfig/cron to judge.
func sundayAsZero(f string) string {
	parts := strings.Split(f, ",")
	for i, part := range parts {
		base, stepText, hasStep := strings.Cut(part, "/")
		lo, hi, isRange := strings.Cut(base, "-")
		if !isRange {
			hi = lo
		}
		if hi != "7" {
			continue
		}
		from, err := dayNumber(lo)
		if err != nil || from < 0 || from > 7 {
			continue
		}
		step := 1
		if hasStep {
			if step, err = strconv.Atoi(stepText); err != nil || step <= 0 {
				continue
			}
		}
		var days []string
		for d := from; d <= 7; d += step {
			days = append(days, strconv.Itoa(d%7))
		}
		parts[i] = strings.Join(days, ",")
	}
	return strings.Join(parts, ",")
}

// dayNumber reads a day of the week as a number or a three-letter name.
func dayNumber(s string) (int, error) {
	for i, name := range []string{"SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"} {
		if strings.EqualFold(s, name) {
			return i, nil
		}
	}
	return strconv.Atoi(s)
}
