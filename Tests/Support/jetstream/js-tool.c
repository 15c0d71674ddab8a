/*
 * js-tool: the NATS C client (Debian's libnats-dev), used by the tests and
 * the benchmark as a second, independent JetStream client.
 *
 *   js-tool info URLS STREAM                 messages, leader, replicas, duplicate window (s)
 *   js-tool dump URLS STREAM                 every message, one per line in stream order:
 *                                            Nats-Msg-Id TAB subject TAB payload
 *   js-tool create URLS STREAM SUBJECT R DUPE_S [MAX_MSG_SIZE]   creates a stream (file storage)
 *   js-tool stepdown URLS STREAM             asks the stream's leader to step down
 *   js-tool delete URLS STREAM               deletes the stream (its messages and its duplicate window)
 *   js-tool publish URLS SUBJECT FILE [LINES]   publishes FILE asynchronously, LINES lines per
 *                                            message (default 1), the first line's 24 hex characters
 *                                            after "_id":" as Nats-Msg-Id; prints the rate
 *
 * URLS is a comma-separated list. Exit 0 on success, 1 with a message on stderr.
 */
#include <nats/nats.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void fail(const char *what, natsStatus s, jsErrCode jerr) {
    fprintf(stderr, "js-tool: %s: %s (jetstream error %d)\n", what, natsStatus_GetText(s), (int)jerr);
    nats_PrintLastErrorStack(stderr);
    exit(1);
}

static natsConnection *connect_to(const char *urls) {
    natsOptions *opts = NULL;
    natsConnection *nc = NULL;
    const char *servers[16];
    int count = 0;
    char *list = strdup(urls);
    for (char *next = strtok(list, ","); next != NULL && count < 16; next = strtok(NULL, ",")) servers[count++] = next;
    natsStatus s = natsOptions_Create(&opts);
    if (s == NATS_OK) s = natsOptions_SetServers(opts, servers, count);
    if (s == NATS_OK) s = natsOptions_SetTimeout(opts, 5000);
    if (s == NATS_OK) s = natsOptions_SetMaxReconnect(opts, 60);
    if (s == NATS_OK) s = natsOptions_SetReconnectWait(opts, 250);
    if (s == NATS_OK) s = natsConnection_Connect(&nc, opts);
    if (s != NATS_OK) fail("connect", s, 0);
    natsOptions_Destroy(opts);
    free(list);
    return nc;
}

static jsCtx *jetstream(natsConnection *nc) {
    jsCtx *js = NULL;
    jsOptions jo;
    jsOptions_Init(&jo);
    jo.Wait = 10000;
    jo.PublishAsync.MaxPending = 65536;
    jo.PublishAsync.StallWait = 60000;  /* at the window: wait for PubAcks, do not fail */
    natsStatus s = natsConnection_JetStream(&js, nc, &jo);
    if (s != NATS_OK) fail("jetstream", s, 0);
    return js;
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: js-tool info|dump|create|stepdown|publish URLS STREAM|SUBJECT ...\n");
        return 2;
    }
    const char *command = argv[1];
    natsConnection *nc = connect_to(argv[2]);
    jsCtx *js = jetstream(nc);
    jsErrCode jerr = 0;
    natsStatus s;
    if (strcmp(command, "info") == 0) {
        jsStreamInfo *si = NULL;
        s = js_GetStreamInfo(&si, js, argv[3], NULL, &jerr);
        if (s != NATS_OK) fail("stream info", s, jerr);
        printf("messages %llu\nleader %s\nreplicas %lld\nduplicate_window_s %lld\nfirst_seq %llu\nlast_seq %llu\n",
               (unsigned long long)si->State.Msgs,
               si->Cluster != NULL && si->Cluster->Leader != NULL ? si->Cluster->Leader : "-",
               (long long)si->Config->Replicas, (long long)(si->Config->Duplicates / 1000000000LL),
               (unsigned long long)si->State.FirstSeq, (unsigned long long)si->State.LastSeq);
        jsStreamInfo_Destroy(si);
    } else if (strcmp(command, "dump") == 0) {
        jsStreamInfo *si = NULL;
        s = js_GetStreamInfo(&si, js, argv[3], NULL, &jerr);
        if (s != NATS_OK) fail("stream info", s, jerr);
        uint64_t total = si->State.Msgs;
        char subject[256] = ">";
        if (si->Config->SubjectsLen > 0) snprintf(subject, sizeof subject, "%s", si->Config->Subjects[0]);
        jsStreamInfo_Destroy(si);
        jsSubOptions so;
        jsSubOptions_Init(&so);
        so.Stream = argv[3];
        so.Ordered = true;
        so.Config.DeliverPolicy = js_DeliverAll;
        natsSubscription *sub = NULL;
        if (total > 0) {
            s = js_SubscribeSync(&sub, js, subject, NULL, &so, &jerr);
            if (s != NATS_OK) fail("subscribe", s, jerr);
            natsSubscription_SetPendingLimits(sub, -1, -1);
        }
        for (uint64_t n = 0; n < total; n++) {
            natsMsg *msg = NULL;
            s = natsSubscription_NextMsg(&msg, sub, 10000);
            if (s != NATS_OK) fail("next message", s, 0);
            const char *id = NULL;
            if (natsMsgHeader_Get(msg, "Nats-Msg-Id", &id) != NATS_OK) id = "-";
            printf("%s\t%s\t", id, natsMsg_GetSubject(msg));
            fwrite(natsMsg_GetData(msg), 1, (size_t)natsMsg_GetDataLength(msg), stdout);
            fputc('\n', stdout);
            natsMsg_Destroy(msg);
        }
        if (sub != NULL) natsSubscription_Destroy(sub);
    } else if (strcmp(command, "create") == 0 && argc >= 7) {
        jsStreamConfig cfg;
        jsStreamConfig_Init(&cfg);
        cfg.Name = argv[3];
        const char *subjects[1] = {argv[4]};
        cfg.Subjects = subjects;
        cfg.SubjectsLen = 1;
        cfg.Storage = js_FileStorage;
        cfg.Replicas = atoll(argv[5]);
        cfg.Duplicates = atoll(argv[6]) * 1000000000LL;
        if (argc >= 8) cfg.MaxMsgSize = (int32_t)atoll(argv[7]);
        jsStreamInfo *si = NULL;
        s = js_AddStream(&si, js, &cfg, NULL, &jerr);
        if (s != NATS_OK) fail("add stream", s, jerr);
        jsStreamInfo_Destroy(si);
    } else if (strcmp(command, "delete") == 0) {
        s = js_DeleteStream(js, argv[3], NULL, &jerr);
        if (s != NATS_OK && jerr != JSStreamNotFoundErr) fail("delete stream", s, jerr);
    } else if (strcmp(command, "stepdown") == 0) {
        char subject[256];
        snprintf(subject, sizeof subject, "$JS.API.STREAM.LEADER.STEPDOWN.%s", argv[3]);
        natsMsg *reply = NULL;
        s = natsConnection_RequestString(&reply, nc, subject, "", 10000);
        if (s != NATS_OK) fail("stepdown", s, 0);
        fwrite(natsMsg_GetData(reply), 1, (size_t)natsMsg_GetDataLength(reply), stdout);
        fputc('\n', stdout);
        natsMsg_Destroy(reply);
    } else if (strcmp(command, "publish") == 0 && argc >= 5) {
        FILE *in = fopen(argv[4], "r");
        if (in == NULL) { perror(argv[4]); return 1; }
        long per = argc >= 6 ? atol(argv[5]) : 1;
        if (per < 1) per = 1;
        char *line = NULL;
        size_t capacity = 0;
        ssize_t length;
        long count = 0, messages = 0, inMessage = 0;
        size_t used = 0, room = 1 << 20;
        char *body = malloc(room);
        char id[25] = {0};
        double started = now();
        for (;;) {
            length = getline(&line, &capacity, in);
            if (length > 0) {
                if (inMessage == 0) {
                    char *at = strstr(line, "\"_id\":\"");
                    memset(id, 0, sizeof id);
                    if (at != NULL) memcpy(id, at + 7, 24);
                }
                if (per == 1 && line[length - 1] == '\n') length--;
                if (used + (size_t)length > room) { room = (used + (size_t)length) * 2; body = realloc(body, room); }
                memcpy(body + used, line, (size_t)length);
                used += (size_t)length;
                inMessage++;
                count++;
            }
            if (inMessage > 0 && (inMessage == per || length <= 0)) {
                jsPubOptions po;
                jsPubOptions_Init(&po);
                po.MsgId = id;
                s = js_PublishAsync(js, argv[3], body, (int)used, &po);
                if (s != NATS_OK) fail("publish", s, 0);
                messages++;
                used = 0;
                inMessage = 0;
            }
            if (length <= 0) break;
        }
        jsPubOptions po;
        jsPubOptions_Init(&po);
        po.MaxWait = 120000;
        s = js_PublishAsyncComplete(js, &po);
        if (s != NATS_OK) fail("waiting for acknowledgements", s, 0);
        double took = now() - started;
        printf("published %ld lines in %ld messages in %.3f s: %.0f lines/s\n", count, messages, took, (double)count / took);
        free(body);
        free(line);
        fclose(in);
    } else {
        fprintf(stderr, "js-tool: unknown command or missing arguments\n");
        return 2;
    }
    jsCtx_Destroy(js);
    natsConnection_Destroy(nc);
    return 0;
}
