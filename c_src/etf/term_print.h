/*
 * term_print.h — a term as the BEAM prints it, for log records: the text
 * io_lib:format("~p", [Term]) gives, on one line, as UTF-8. An entity id
 * <<"alice">> reads <<"alice">> (ei's printer says #Bin<97,108,...>), a
 * float 0.1 reads 0.1, an atom that needs quotes has them.
 *
 * Matched to ~p, checked against it by test/term_encode_SUITE.erl, for
 * integers of any size, floats (the shortest text that reads back the
 * same, as float_to_list(F, [short])), atoms (quoted when ~p quotes them,
 * characters beyond Latin-1 as \x{...}), strings (a list of printable
 * Latin-1 characters), lists proper and improper, tuples, maps (in the
 * order the term holds their pairs) and binaries (a printable one as
 * <<"...">>). Where ~p could not be matched it reads plainly: a pid as
 * <a@host.12.0> (~p numbers the node by a table only that BEAM has), a
 * reference as #Ref<a@host.1.2.3>, a port as #Port<a@host.5>, a fun as
 * #Fun<Module.Index.Uniq> or fun M:F/A. ~p breaks a long term over lines
 * at 80 columns; this never does. Latin-1 characters are written as
 * their UTF-8 (a log is UTF-8), which is what ~p's characters are.
 */
#ifndef SN_TERM_PRINT_H
#define SN_TERM_PRINT_H

#include <stddef.h>

/* The longest text term_print writes by default (a log line's term). */
#define TERM_PRINT_MAX 1000

/* Prints the validated term at buf[*idx] (no version byte) into a new
 * NUL-terminated string *out, which the caller frees, and advances *idx
 * past it. Text beyond `max` bytes (at least 3) is cut and ends in
 * "...". Returns 0, or -ENOMEM (*out NULL, *idx unchanged). */
int term_print(const char *buf, size_t *idx, size_t max, char **out);

#endif
