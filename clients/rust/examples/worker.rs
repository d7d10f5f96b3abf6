//! A managed worker process: run by svcd as an application, it answers each task sent with
//! `run_task` with `result:<payload>` (same content type) until stopped or superseded.
//! The daemon's CA comes from `SSL_CERT_FILE` (set in the application's `env`).

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let worker = match svc::SvcWorker::new(None) {
        Ok(worker) => worker,
        Err(e) => {
            println!("worker failed: {e}");
            std::process::exit(2);
        }
    };
    let outcome = worker
        .run(|task| async move {
            let mut body = b"result:".to_vec();
            body.extend_from_slice(&task.body);
            (body, task.content_type)
        })
        .await;
    match outcome {
        Err(svc::SvcError::Cancelled) | Ok(()) => println!("worker stopped"),
        Err(e) => {
            println!("worker failed: {e}");
            std::process::exit(2);
        }
    }
}
