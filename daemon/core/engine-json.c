/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What the engine concluded, for people and programs: each disk as JSON (dump, D-Bus) or as a
 * line of the text table. */
#include "consumers-read.h"
#include "engine.h"
#include "log.h"
#include "util.h"

const char *desired_to_string(int desired) {
        return desired < 0 ? "-" : desired ? "on" : "off";
}

static void json_attr_int(JsonWriter *w, const char *key, int v) {
        json_key(w, key);
        if (v == ATTR_ABSENT)
                json_null(w);
        else
                json_int(w, v);
}

/* The value of the disk's "override": the override in force, or null. */
static void override_json(const EngineDevice *d, JsonWriter *w) {
        if (d->override_scope) {
                json_object_begin(w);
                json_key(w, "scope");
                json_string(w, d->override_scope);
                json_key(w, "setting");
                json_string(w, setting_to_string(d->setting));
                json_key(w, "force");
                json_bool(w, d->force);
                json_key(w, "bound_to");
                json_string(w, d->override_binding);
                json_key(w, "source");
                json_string(w, d->override_source);
                json_object_end(w);
        } else
                json_null(w);
}

/* What Policy=balanced learned about the disk, and since when and why. */
static void learned_json_members(const EngineDevice *d, JsonWriter *w) {
        json_key(w, "learned");
        json_string(w, learned_to_string(d->learned));
        json_key(w, "learned_since_usec");
        if (d->learned == LEARNED_NONE)
                json_null(w);
        else
                json_uint(w, d->learned_since_usec);
        json_key(w, "learned_reason");
        json_string(w, d->learned_reason);
}

/* The value of the disk's "facts": what sysfs and udev say of it. */
static void facts_json(const DeviceFacts *f, JsonWriter *w) {
        json_object_begin(w);
        json_key(w, "integrity_format");
        json_string(w, f->integrity_format);
        json_attr_int(w, "write_generate", f->write_generate);
        json_attr_int(w, "read_verify", f->read_verify);
        json_attr_int(w, "integrity_capable", f->integrity_capable);
        json_key(w, "md_level");
        json_string(w, f->md_level);
        json_attr_int(w, "md_skip_copy", f->md_skip_copy);
        json_key(w, "dm_name");
        json_string(w, f->dm_name);
        json_key(w, "dm_uuid");
        json_string(w, f->dm_uuid);
        json_key(w, "dm_table_source");
        json_string(w, f->dm_table_source);
        json_key(w, "dm_targets");
        if (f->dm_table_source) {
                json_array_begin(w);
                for (size_t i = 0; i < f->dm_table.n; i++) {
                        _cleanup_free_ char *t = dm_target_to_string(&f->dm_table.targets[i]);
                        json_string(w, t ?: "?");
                }
                json_array_end(w);
        } else
                json_null(w);
        json_key(w, "dm_table_missing");
        json_string(w, f->dm_table_missing);
        json_key(w, "loop_backing_file");
        json_string(w, f->loop_backing_file);
        json_attr_int(w, "loop_dio", f->loop_dio);
        json_key(w, "iscsi_data_digest");
        json_string(w, f->iscsi_data_digest);
        json_key(w, "scsi_host_driver");
        json_string(w, f->scsi_host_driver);
        json_key(w, "nvme_transport");
        json_string(w, f->nvme_transport);
        json_key(w, "nvme_paths");
        json_strv(w, f->nvme_paths);
        json_key(w, "mmc_spi");
        json_bool(w, f->mmc_spi);
        json_key(w, "hidden");
        json_bool(w, f->hidden);
        json_key(w, "slaves");
        json_strv(w, f->slaves);
        json_key(w, "holders");
        json_strv(w, f->holders);
        json_key(w, "partitions");
        json_array_begin(w);
        for (size_t i = 0; i < f->n_partitions; i++)
                json_string(w, f->partitions[i].name);
        json_array_end(w);
        json_object_end(w);
}

void engine_device_json_members(const Engine *e, const EngineDevice *d, JsonWriter *w) {
        const DeviceFacts *f = d->facts;
        char buf[32];

        json_key(w, "name");
        json_string(w, f->name);
        json_key(w, "devnum");
        json_string(w, format_devnum(f->devnum, buf));
        json_key(w, "kind");
        json_string(w, device_kind_to_string(f->kind));
        json_key(w, "driver");
        json_string(w, f->driver);
        json_attr_int(w, "stable_writes", f->stable_writes);
        json_attr_int(w, "declared", f->declared_stable_writes);
        json_key(w, "in_force");
        json_bool(w, d->class.in_force);
        json_key(w, "integrity_enforced");
        json_bool(w, d->class.integrity_enforced);
        json_key(w, "need");
        json_string(w, need_to_string(d->class.need));
        json_key(w, "reasons");
        json_strv(w, d->class.reasons);
        json_key(w, "flag_cause");
        json_string(w, d->class.flag_cause);
        json_key(w, "desired");
        json_string(w, d->decision.desired < 0 ? NULL : desired_to_string(d->decision.desired));
        json_key(w, "desired_source");
        json_string(w, desired_source_to_string(d->decision.source));
        json_key(w, "decision");
        json_string(w, d->decision.reason);
        json_key(w, "refused");
        json_bool(w, d->decision.refused);
        json_key(w, "forced");
        json_bool(w, d->decision.forced);
        json_key(w, "managed");
        json_bool(w, d->managed);
        json_key(w, "setting");
        json_string(w, setting_to_string(d->setting));
        json_key(w, "diskseq");
        json_uint(w, f->diskseq);
        json_key(w, "override");
        override_json(d, w);
        learned_json_members(d, w);
        json_key(w, "need_problem");
        json_string(w, d->need_problem);

        json_key(w, "facts");
        facts_json(f, w);

        json_key(w, "errors");
        json_strv(w, f->errors);
}

void engine_dump_json(const Engine *e, char *const *names, FILE *f, bool pretty) {
        _cleanup_(local_consumers_done) LocalConsumers local = {};
        JsonWriter w;

        /* What a consumer took, as far as this process finds them (consumers-read.h). */
        if (local_consumers_read(e, &local) < 0)
                log_oom();
        ConsumerInputs in = local_consumers_inputs(&local);
        json_init(&w, f, pretty);
        json_array_begin(&w);
        for (size_t i = 0; i < e->table.n; i++) {
                _cleanup_(device_consumers_done) DeviceConsumers c = {};
                if (strv_length(names) > 0 && !strv_contains(names, e->devices[i].facts->name))
                        continue;
                if (consumers_of(e, &e->devices[i], &in, &c) < 0)
                        log_oom();
                json_object_begin(&w);
                engine_device_json_members(e, &e->devices[i], &w);
                consumers_json(&c, &w);
                json_object_end(&w);
        }
        json_array_end(&w);
        if (!pretty)
                fputc('\n', f);
}

void engine_dump_text(const Engine *e, FILE *f) {
        fprintf(f, "%-12s %-8s %-15s %-12s %-7s %-9s %s\n", "DEVICE", "KIND", "KERNEL", "NEED", "DESIRED",
                "SOURCE", "REASON");
        for (size_t i = 0; i < e->table.n; i++) {
                const EngineDevice *d = &e->devices[i];
                const DeviceFacts *df = d->facts;
                fprintf(f, "%-12s %-8s %-15s %-12s %-7s %-9s %s\n", df->name,
                        device_kind_to_string(df->kind),
                        kernel_state_to_string(df->stable_writes, d->class.in_force),
                        need_to_string(d->class.need), desired_to_string(d->decision.desired),
                        desired_source_to_string(d->decision.source),
                        d->class.reasons ? d->class.reasons[0] : "");
        }
}
